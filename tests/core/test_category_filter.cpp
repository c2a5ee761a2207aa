// The memory view's category lists (`--categories`): groups and names parse to
// the categories they name, and every bad entry is one error naming it and the
// allowed names.
#include <QtTest>

#include "inspect/category_filter.h"
#include "memory/memory_ledger.h"

using namespace shardscope;

class TestCategoryFilter : public QObject {
  Q_OBJECT
 private slots:
  void groupsAndNamesParse() {
    std::string error;
    const auto f = CategoryFilter::parse("model-state, gathered", &error);
    QVERIFY2(f.has_value(), error.c_str());
    for (int c = 0; c < kCategoryCount; ++c) {
      const auto cat = static_cast<Category>(c);
      QCOMPARE(f->shows(cat), isModelState(cat) || cat == Category::Gathered);
    }
    QCOMPARE(f->describe(), std::string("model state, gathered"));
    QCOMPARE(CategoryFilter::parse("param,activation", &error)->describe(), std::string("param, activation"));
    QVERIFY(CategoryFilter::parse("all", &error)->showsAll());
    QCOMPARE(CategoryFilter::parse("model-state", &error)->describe(), std::string("model state"));
    const auto one = CategoryFilter::parse("activation", &error);
    QVERIFY(one && one->shows(Category::Activation) && !one->shows(Category::Param));
  }

  void toggling() {
    CategoryFilter f = CategoryFilter::all();
    f.set(Category::Activation, false);
    QVERIFY(!f.shows(Category::Activation));
    QVERIFY(!f.showsAll());
    f.set(Category::Activation, true);
    QVERIFY(f == CategoryFilter::all());
  }

  void badEntriesAreOneNamedError() {
    for (const char* bad : {"bogus", "param,", "", "model_state", "Param"}) {
      std::string error;
      QVERIFY2(!CategoryFilter::parse(bad, &error).has_value(), bad);
      QVERIFY2(error.find("allowed") != std::string::npos && error.find("activation") != std::string::npos, error.c_str());
      if (*bad && std::string(bad).back() != ',') QVERIFY2(error.find(std::string("'") + bad + "'") != std::string::npos, error.c_str());
    }
  }
};

QTEST_MAIN(TestCategoryFilter)
#include "test_category_filter.moc"
