// The post-mortem pickle reader: protocols 2-5 as Python's pickle writes them
// (fixtures from tests/data/postmortem/make_fixtures.py), hand-made bytes for
// each opcode family, ints past 64 bits, the memo sharing a container, and one
// clear error with the byte offset for refused or broken input.
#include <QtTest>

#include <fstream>
#include <string>

#include "postmortem/pickle_reader.h"

using namespace shardscope;
using namespace shardscope::postmortem;

namespace {

const std::string kData = std::string(SHARDSCOPE_SOURCE_DIR) + "/tests/data/postmortem/";

std::string fileBytes(const std::string& path) {
  std::ifstream f(path, std::ios::binary);
  return std::string((std::istreambuf_iterator<char>(f)), std::istreambuf_iterator<char>());
}

std::string bytes(std::initializer_list<int> b) {
  std::string s;
  for (int c : b) s.push_back(static_cast<char>(c));
  return s;
}

// The error text readPickle throws, or "" when it reads.
std::string pickleError(const std::string& b) {
  try {
    (void)readPickle(b);
  } catch (const PostmortemFormatError& e) {
    return e.what();
  }
  return "";
}

}  // namespace

class TestPostmortemPickle : public QObject {
  Q_OBJECT

 private slots:
  void scalarsAndContainers() {
    // {'a': [1, -2, 300, 70000], 'b': (None, True, False), 'c': 1.5, 'd': b'xy'} at protocol 2, hand-assembled.
    const std::string p = bytes({0x80, 2, '}', '(', 'X', 1, 0, 0, 0, 'a', ']', '(', 'K', 1, 'J', 0xfe, 0xff, 0xff, 0xff,
                                 'M', 0x2c, 0x01, 'J', 0x70, 0x11, 0x01, 0x00, 'e', 0x8c, 1, 'b', 'N', 0x88, 0x89, 0x87,
                                 0x8c, 1, 'c', 'G', 0x3f, 0xf8, 0, 0, 0, 0, 0, 0, 0x8c, 1, 'd', 'C', 2, 'x', 'y', 'u', '.'});
    const ValueTree t = readPickle(p);
    QCOMPARE(t.root.kind, ValueKind::Dict);
    const Value* a = t.get(t.root, "a");
    QVERIFY(a != nullptr);
    QCOMPARE(t.size(*a), size_t(4));
    QCOMPARE(t.at(*a, 0).i, int64_t(1));
    QCOMPARE(t.at(*a, 1).i, int64_t(-2));
    QCOMPARE(t.at(*a, 2).i, int64_t(300));
    QCOMPARE(t.at(*a, 3).i, int64_t(70000));
    const Value* b = t.get(t.root, "b");
    QCOMPARE(b->kind, ValueKind::Tuple);
    QCOMPARE(t.at(*b, 0).kind, ValueKind::None);
    QCOMPARE(t.at(*b, 1).i, int64_t(1));
    QCOMPARE(t.at(*b, 2).i, int64_t(0));
    QCOMPARE(t.get(t.root, "c")->f, 1.5);
    QCOMPARE(std::string(t.text(*t.get(t.root, "d"))), std::string("xy"));
  }

  void longsOfAnySize() {
    // LONG1 with 8 bytes: 2^62; with 9 bytes: 2^64 (kept as digits); -2^63 in 8 bytes; a 9-byte -1 fits.
    const std::string p = bytes({0x80, 2, ']', '(', 0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x40, 0x8a, 9, 0, 0, 0, 0, 0, 0, 0, 0, 1,
                                 0x8a, 8, 0, 0, 0, 0, 0, 0, 0, 0x80, 0x8a, 9, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff,
                                 0xff, 0x8a, 0, 'e', '.'});
    const ValueTree t = readPickle(p);
    QCOMPARE(t.size(t.root), size_t(5));
    QCOMPARE(t.at(t.root, 0).i, int64_t(1) << 62);
    QCOMPARE(t.at(t.root, 1).kind, ValueKind::BigInt);
    QCOMPARE(std::string(t.text(t.at(t.root, 1))), std::string("18446744073709551616"));
    QCOMPARE(t.at(t.root, 2).i, INT64_MIN);
    QCOMPARE(t.at(t.root, 3).i, int64_t(-1));
    QCOMPARE(t.at(t.root, 4).i, int64_t(0));
  }

  void memoSharesTheContainer() {
    // l = []; d = {'x': l, 'y': l}; then l.append(7) through the memo: both keys see [7].
    const std::string q = bytes({0x80, 4, '}', 0x94, '(', 0x8c, 1, 'x', ']', 0x94, 0x8c, 1, 'y', 'h', 1, 'u', 'h', 1, 'K', 7,
                                 'a', '0', '.'});
    const ValueTree t = readPickle(q);
    const Value* x = t.get(t.root, "x");
    const Value* y = t.get(t.root, "y");
    QVERIFY(x != nullptr && y != nullptr);
    QCOMPARE(x->index, y->index);
    QCOMPARE(t.size(*x), size_t(1));
    QCOMPARE(t.at(*y, 0).i, int64_t(7));
  }

  void pythonFixturesRead() {
    // Written by Python's pickle at protocols 2, 4 and 5.
    for (const char* name : {"snapshot_two_devices.pickle", "snapshot_one_device.pickle", "snapshot_expandable.pickle"}) {
      const ValueTree t = readPickle(fileBytes(kData + name));
      QVERIFY2(t.get(t.root, "segments") != nullptr, name);
      QVERIFY2(t.get(t.root, "device_traces") != nullptr, name);
    }
    const ValueTree t = readPickle(fileBytes(kData + "fr_dtype_mismatch/nccl_trace_rank_1"));
    QCOMPARE(std::string(t.text(*t.get(t.root, "version"))), std::string("2.10"));
  }

  void jsonToo() {
    const ValueTree t = readPostmortemDocument(R"({"segments": [], "n": 18446744073709551615, "f": 2.5})");
    QCOMPARE(t.size(*t.get(t.root, "segments")), size_t(0));
    QCOMPARE(t.get(t.root, "n")->kind, ValueKind::BigInt);
    QCOMPARE(t.get(t.root, "f")->f, 2.5);
    try {
      (void)readPostmortemDocument("{\"a\": ");
      QFAIL("bad JSON read");
    } catch (const PostmortemFormatError& e) {
      QVERIFY2(std::string(e.what()).find("neither a pickle nor valid JSON") != std::string::npos, e.what());
    }
  }

  void errorsNameTheOpcodeAndOffset_data() {
    QTest::addColumn<QByteArray>("input");
    QTest::addColumn<QString>("expected");
    auto row = [](const char* name, const std::string& b, const char* expected) {
      QTest::newRow(name) << QByteArray(b.data(), static_cast<int>(b.size())) << QString(expected);
    };
    row("global", bytes({0x80, 2, 'c', 'o', 's', '\n', 's', 'y', 's', 't', 'e', 'm', '\n', '.'}), "byte 2: refused opcode GLOBAL");
    row("stack_global", bytes({0x80, 4, 0x8c, 1, 'o', 0x8c, 1, 's', 0x93, '.'}), "byte 8: refused opcode STACK_GLOBAL");
    row("reduce", bytes({0x80, 2, 'N', ')', 'R', '.'}), "byte 4: refused opcode REDUCE");
    row("build", bytes({0x80, 2, '}', '}', 'b', '.'}), "byte 4: refused opcode BUILD");
    row("newobj", bytes({0x80, 2, 'N', ')', 0x81, '.'}), "byte 4: refused opcode NEWOBJ");
    row("inst", bytes({0x80, 2, '(', 'i', 'a', '\n', 'b', '\n', '.'}), "byte 3: refused opcode INST");
    row("truncated", bytes({0x80, 4, ']', '(', 'K', 1}), "byte 6: the pickle ends before its STOP");
    row("long string", bytes({0x80, 4, 'X', 0xff, 0xff, 0, 0, 'a', '.'}), "byte 2: an argument of 65535 bytes runs past the end");
    row("huge frame", bytes({0x80, 4, 0x95, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0xff, 0x7f, '.'}), "byte 2: a FRAME of");
    row("no mark", bytes({0x80, 2, ']', 'e', '.'}), "byte 3: no MARK is open (APPENDS)");
    row("unset memo", bytes({0x80, 2, 'h', 5, '.'}), "byte 2: memo index 5 was never stored (BINGET)");
    row("memo far", bytes({0x80, 2, 'N', 'r', 0, 0, 0, 1, '.'}), "byte 3: memo index 16777216 is beyond");
    row("setitem on list", bytes({0x80, 2, ']', 'K', 1, 'K', 2, 's', '.'}), "byte 7: expects a dict, found a list (SETITEM)");
    row("two values", bytes({0x80, 2, 'N', 'N', '.'}), "byte 4: STOP needs exactly one value");
    row("not a pickle", bytes({'{', '}'}), "byte 0: not a pickle");
    row("protocol 9", bytes({0x80, 9, 'N', '.'}), "byte 0: not a pickle");
    row("unknown", bytes({0x80, 2, 0xfe, '.'}), "byte 2: unknown opcode 0xfe");
    row("text int", bytes({0x80, 2, 'I', '1', '\n', '.'}), "byte 2: opcode INT is not among those");
    row("long too long", bytes({0x80, 2, 0x8b, 0, 0x20, 0, 0}), "byte 2: an argument of 8192 bytes");
    std::string deep = bytes({0x80, 2});
    deep.append(300, '(');
    row("marks too deep", deep, "byte 258: MARKs nest deeper than 256");
  }
  void errorsNameTheOpcodeAndOffset() {
    QFETCH(QByteArray, input);
    QFETCH(QString, expected);
    const std::string error = pickleError(std::string(input.constData(), static_cast<size_t>(input.size())));
    QVERIFY2(error.find(expected.toStdString()) != std::string::npos, error.c_str());
  }

  void fixtureThatConstructsIsRefused() {
    const std::string error = pickleError(fileBytes(kData + "refused_object.pickle"));
    QVERIFY2(error.find("refused opcode STACK_GLOBAL") != std::string::npos, error.c_str());
  }

  void selfContainingListPrintsBounded() {
    // l = []; l.append(l): the tree holds a cycle; toJson stops at it.
    const ValueTree t = readPickle(bytes({0x80, 4, ']', 0x94, 'h', 0, 'a', '.'}));
    QCOMPARE(t.toJson(t.root).dump(), std::string("[\"...\"]"));
  }
};

QTEST_GUILESS_MAIN(TestPostmortemPickle)
#include "test_postmortem_pickle.moc"
