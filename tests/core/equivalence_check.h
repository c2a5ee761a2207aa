// The strategy-equivalence check shared by the DDP, strategy and GPT tests: a
// run must match a reference run (one rank on the whole batch) within the
// bf16 bound argued in test_ddp.cpp — losses to 1e-3 relative, the parameter
// update to 5% in L2, no element off by more than 2·lr·steps.
#pragma once

#include <QtTest>

#include <cmath>
#include <vector>

#include "engine/run.h"
#include "model/model.h"

namespace shardscope::testing {

// ||Δθ_a − Δθ_b|| / ||Δθ_b||, Δθ = final − initial: how differently two runs moved.
inline double relativeUpdateError(const std::vector<float>& init, const std::vector<float>& a,
                                  const std::vector<float>& b) {
  double diff = 0, norm = 0;
  for (size_t i = 0; i < init.size(); ++i) {
    const double da = a[i] - init[i], db = b[i] - init[i];
    diff += (da - db) * (da - db);
    norm += db * db;
  }
  return std::sqrt(diff / norm);
}

inline std::vector<float> initialMaster(const RunConfig& c) {
  std::vector<float> m(static_cast<size_t>(ModelSpec(c.model).numParams()));
  initModelParams(ModelSpec(c.model), c.seed, m.data());
  return m;
}

// QVERIFY-based; the caller checks QTest::currentTestFailed() if it goes on.
// Returns the relative update error.
inline double verifyEquivalent(const RunResult& got, const RunResult& ref, const RunConfig& c) {
  double rel = -1;
  [&] {
    QCOMPARE(got.losses.size(), ref.losses.size());
    for (size_t s = 0; s < ref.losses.size(); ++s)
      QVERIFY2(std::abs(got.losses[s] - ref.losses[s]) <= 1e-3 * std::abs(ref.losses[s]),
               qPrintable(QString("step %1: loss %2 vs reference %3").arg(s).arg(got.losses[s]).arg(ref.losses[s])));
    const auto init = initialMaster(c);
    rel = relativeUpdateError(init, got.final_master, ref.final_master);
    QVERIFY2(rel < 0.05, qPrintable(QString("relative update error %1").arg(rel)));
    for (size_t i = 0; i < init.size(); ++i)
      QVERIFY2(std::abs(got.final_master[i] - ref.final_master[i]) <= 2.0 * c.lr * c.steps + 1e-6,
               qPrintable(QString("element %1 differs by %2").arg(i).arg(got.final_master[i] - ref.final_master[i])));
  }();
  return rel;
}

}  // namespace shardscope::testing
