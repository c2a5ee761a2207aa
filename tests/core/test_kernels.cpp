// CPU kernels against float64 references written here, independent of the kernel code:
// naive double GEMM, double LayerNorm/GELU with central finite differences for the
// backward passes, a double torch.optim.AdamW, and an RNE bf16 rounding done by
// comparing distances in double. Every tolerance says where its size comes from.
#include <QtTest>

#include <cfloat>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <numbers>
#include <random>
#include <vector>

#include "kernels/cpu_kernels.h"
#include "tensor/bf16.h"

// The kernels promise OpenBLAS; the test checks the thread setting took.
extern "C" int openblas_get_num_threads(void);
extern "C" int openblas_get_num_procs(void);

using namespace shardscope;

namespace {

float floatFromBits(uint32_t bits) {
  float f;
  std::memcpy(&f, &bits, sizeof f);
  return f;
}

// This process's threads, as /proc lists them.
int threadCount() {
  int n = 0;
  for ([[maybe_unused]] const auto& task : std::filesystem::directory_iterator("/proc/self/task")) ++n;
  return n;
}

uint32_t bitsFromFloat(float f) {
  uint32_t u;
  std::memcpy(&u, &f, sizeof u);
  return u;
}

// Reference RNE for a finite value: pick the nearer of the two bf16 neighbours that
// bracket it, measured in double; on a tie pick the one with an even last bit.
uint16_t referenceBf16(double value) {
  const float f = static_cast<float>(value);  // only used to find the neighbours
  const uint32_t u = bitsFromFloat(f);
  const uint16_t trunc = static_cast<uint16_t>(u >> 16);  // toward zero in magnitude
  const uint16_t away = static_cast<uint16_t>(trunc + 1);
  const double lo = static_cast<double>(floatFromBits(static_cast<uint32_t>(trunc) << 16));
  // Past the largest finite bf16 the next step up is 2^128 (it rounds to inf), not inf.
  const bool away_is_inf = (away & 0x7fffu) == 0x7f80u;
  const double hi = away_is_inf ? std::copysign(std::ldexp(1.0, 128), value)
                                : static_cast<double>(floatFromBits(static_cast<uint32_t>(away) << 16));
  const double dlo = std::fabs(value - lo);
  const double dhi = std::fabs(hi - value);
  if (dlo < dhi) return trunc;
  if (dhi < dlo) return away;
  return (trunc & 1u) ? away : trunc;
}

std::vector<float> randomVector(size_t n, std::mt19937& rng, float lo = -1.0f, float hi = 1.0f) {
  std::uniform_real_distribution<float> dist(lo, hi);
  std::vector<float> v(n);
  for (float& x : v) x = dist(rng);
  return v;
}

// Double LayerNorm of one row; the function the finite differences differentiate.
void referenceLayerNorm(const std::vector<double>& x, const std::vector<double>& gamma,
                        const std::vector<double>& beta, std::vector<double>& y, int rows,
                        int cols, double eps, std::vector<double>* mean = nullptr,
                        std::vector<double>* rstd = nullptr) {
  y.assign(x.size(), 0.0);
  for (int r = 0; r < rows; ++r) {
    const double* xr = x.data() + static_cast<size_t>(r) * cols;
    double mu = 0.0;
    for (int c = 0; c < cols; ++c) mu += xr[c];
    mu /= cols;
    double var = 0.0;
    for (int c = 0; c < cols; ++c) var += (xr[c] - mu) * (xr[c] - mu);
    var /= cols;
    const double rs = 1.0 / std::sqrt(var + eps);
    for (int c = 0; c < cols; ++c) {
      y[static_cast<size_t>(r) * cols + c] = (xr[c] - mu) * rs * gamma[c] + beta[c];
    }
    if (mean) (*mean)[r] = mu;
    if (rstd) (*rstd)[r] = rs;
  }
}

double referenceGelu(double x) {
  const double s = std::sqrt(2.0 / std::numbers::pi);
  return 0.5 * x * (1.0 + std::tanh(s * (x + 0.044715 * x * x * x)));
}

std::vector<double> toDouble(const std::vector<float>& v) { return {v.begin(), v.end()}; }

}  // namespace

class TestKernels : public QObject {
  Q_OBJECT

 private slots:
  void initTestCase();
  void bf16SpecialValues_data();
  void bf16SpecialValues();
  void bf16RoundTripAllBf16();
  void bf16RandomMatchesReference();
  void gemm_data();
  void gemm();
  void gemmRejectsNegativeSize();
  void biasAddAndGrad();
  void layerNormForward_data();
  void layerNormForward();
  void layerNormBackward_data();
  void layerNormBackward();
  void geluForward();
  void geluBackward();
  void mseLoss();
  void mseLossSlicesSumToFullBatch();
  void adamStep_data();
  void adamStep();
  void addBf16InPlace();
  void scaleBf16InPlace();
};

void TestKernels::initTestCase() {
  // OpenBLAS started its pool (one thread per core beyond the caller's) when
  // the test was loaded; initBlasSingleThreaded stops it, and neither a
  // second call nor a GEMM starts it again.
  const int pool = openblas_get_num_threads() - 1;
  const int before = threadCount();
  cpu::initBlasSingleThreaded();
  cpu::initBlasSingleThreaded();  // documented as safe to repeat
  QCOMPARE(openblas_get_num_threads(), 1);
  if (openblas_get_num_procs() > 1) QVERIFY2(pool > 0, "OpenBLAS started no pool on a machine of several cores");
  QCOMPARE(threadCount(), before - pool);
  std::vector<float> a(64 * 64, 1.0f), c(64 * 64, 0.0f);
  cpu::gemm(false, false, 64, 64, 64, 1.0f, a.data(), a.data(), 0.0f, c.data());
  QCOMPARE(c[0], 64.0f);
  QCOMPARE(threadCount(), before - pool);
}

void TestKernels::bf16SpecialValues_data() {
  QTest::addColumn<uint32_t>("input");     // fp32 bits
  QTest::addColumn<uint16_t>("expected");  // bf16 bits
  QTest::newRow("one") << 0x3f800000u << uint16_t{0x3f80};
  QTest::newRow("below tie rounds down") << 0x3f807fffu << uint16_t{0x3f80};
  QTest::newRow("tie to even (down)") << 0x3f808000u << uint16_t{0x3f80};
  QTest::newRow("above tie rounds up") << 0x3f808001u << uint16_t{0x3f81};
  QTest::newRow("tie to even (up)") << 0x3f818000u << uint16_t{0x3f82};
  QTest::newRow("negative tie to even") << 0xbf818000u << uint16_t{0xbf82};
  QTest::newRow("tie carries into exponent") << 0x3fffc000u << uint16_t{0x4000};
  QTest::newRow("+0") << 0x00000000u << uint16_t{0x0000};
  QTest::newRow("-0") << 0x80000000u << uint16_t{0x8000};
  QTest::newRow("+inf") << 0x7f800000u << uint16_t{0x7f80};
  QTest::newRow("-inf") << 0xff800000u << uint16_t{0xff80};
  QTest::newRow("max float overflows to inf") << 0x7f7fffffu << uint16_t{0x7f80};
  QTest::newRow("smallest denormal to 0") << 0x00000001u << uint16_t{0x0000};
  QTest::newRow("denormal tie to even 0") << 0x00008000u << uint16_t{0x0000};
  QTest::newRow("denormal tie to even 2") << 0x00018000u << uint16_t{0x0002};
  QTest::newRow("exact bf16 denormal") << 0x00010000u << uint16_t{0x0001};
  QTest::newRow("denormal rounds to min normal") << 0x007fc000u << uint16_t{0x0080};
  QTest::newRow("negative denormal") << 0x80018001u << uint16_t{0x8002};
}

void TestKernels::bf16SpecialValues() {
  QFETCH(uint32_t, input);
  QFETCH(uint16_t, expected);
  const float f = floatFromBits(input);
  bf16 out;
  cpu::f32ToBf16(&f, &out, 1);
  QCOMPARE(out.bits, expected);
  float back = 0.0f;
  cpu::bf16ToF32(&out, &back, 1);
  QCOMPARE(bitsFromFloat(back), static_cast<uint32_t>(expected) << 16);
}

void TestKernels::bf16RoundTripAllBf16() {
  // Every bf16 pattern widens exactly and narrows back to itself; NaNs (including
  // payloads only in the low bits, which plain truncation-with-carry turns into inf)
  // must stay NaN with the sign kept.
  std::vector<bf16> all(65536);
  for (uint32_t i = 0; i < all.size(); ++i) all[i].bits = static_cast<uint16_t>(i);
  std::vector<float> wide(all.size());
  std::vector<bf16> back(all.size());
  cpu::bf16ToF32(all.data(), wide.data(), all.size());
  cpu::f32ToBf16(wide.data(), back.data(), all.size());
  int nan_count = 0;
  for (uint32_t i = 0; i < all.size(); ++i) {
    QCOMPARE(bitsFromFloat(wide[i]), i << 16);
    if (std::isnan(wide[i])) {
      ++nan_count;
      QVERIFY2(std::isnan(toFloat(back[i])), qPrintable(QString::number(i, 16)));
      QCOMPARE(back[i].bits & 0x8000u, all[i].bits & 0x8000u);
    } else {
      QCOMPARE(back[i].bits, all[i].bits);
    }
  }
  QCOMPARE(nan_count, 2 * 127);  // exponent all ones, 7-bit mantissa non-zero, both signs

  // fp32 NaNs whose payload sits only in the low 16 bits.
  const std::vector<float> nans = {floatFromBits(0x7f800001u), floatFromBits(0xff800001u),
                                   floatFromBits(0x7fffffffu), floatFromBits(0x7fc00000u)};
  std::vector<bf16> nan_out(nans.size());
  cpu::f32ToBf16(nans.data(), nan_out.data(), nans.size());
  for (size_t i = 0; i < nans.size(); ++i) {
    QVERIFY2(std::isnan(toFloat(nan_out[i])), qPrintable(QString::number(nan_out[i].bits, 16)));
    QCOMPARE(nan_out[i].bits & 0x8000u, bitsFromFloat(nans[i]) >> 31 << 15);
  }
}

void TestKernels::bf16RandomMatchesReference() {
  std::mt19937 rng(7);
  std::uniform_int_distribution<uint32_t> bits;
  std::vector<float> in;
  while (in.size() < 200000) {
    const float f = floatFromBits(bits(rng));
    if (std::isfinite(f)) in.push_back(f);
  }
  // Force many exact ties: low 16 bits exactly 0x8000.
  for (size_t i = 0; i < in.size(); i += 4) {
    in[i] = floatFromBits((bitsFromFloat(in[i]) & 0xffff0000u) | 0x8000u);
  }
  std::vector<bf16> out(in.size());
  cpu::f32ToBf16(in.data(), out.data(), in.size());
  for (size_t i = 0; i < in.size(); ++i) {
    const uint16_t want = referenceBf16(static_cast<double>(in[i]));
    if (out[i].bits != want) {
      QFAIL(qPrintable(QString("input 0x%1: got 0x%2, want 0x%3")
                           .arg(bitsFromFloat(in[i]), 8, 16, QChar('0'))
                           .arg(out[i].bits, 4, 16, QChar('0'))
                           .arg(want, 4, 16, QChar('0'))));
    }
  }
}

void TestKernels::gemm_data() {
  QTest::addColumn<bool>("transA");
  QTest::addColumn<bool>("transB");
  QTest::addColumn<int>("M");
  QTest::addColumn<int>("N");
  QTest::addColumn<int>("K");
  QTest::addColumn<float>("alpha");
  QTest::addColumn<float>("beta");
  struct Shape {
    int m, n, k;
    float alpha, beta;
  };
  const Shape shapes[] = {{1, 1, 1, 1.0f, 0.0f},   {3, 5, 7, 1.0f, 0.0f},
                          {17, 13, 33, 0.5f, 0.25f}, {64, 48, 80, 1.0f, 1.0f},
                          {1, 40, 9, -2.0f, 0.5f},  {4, 3, 0, 1.0f, 0.5f}};
  for (bool ta : {false, true}) {
    for (bool tb : {false, true}) {
      for (const Shape& s : shapes) {
        const QByteArray name = QByteArray(ta ? "T" : "N") + (tb ? "T" : "N") + " " +
                                QByteArray::number(s.m) + "x" + QByteArray::number(s.n) +
                                "x" + QByteArray::number(s.k);
        QTest::newRow(name.constData()) << ta << tb << s.m << s.n << s.k << s.alpha << s.beta;
      }
    }
  }
}

void TestKernels::gemm() {
  QFETCH(bool, transA);
  QFETCH(bool, transB);
  QFETCH(int, M);
  QFETCH(int, N);
  QFETCH(int, K);
  QFETCH(float, alpha);
  QFETCH(float, beta);
  std::mt19937 rng(static_cast<unsigned>(M * 131 + N * 17 + K + transA * 2 + transB));
  const std::vector<float> A = randomVector(static_cast<size_t>(M) * K + 1, rng);
  const std::vector<float> B = randomVector(static_cast<size_t>(K) * N + 1, rng);
  const std::vector<float> C0 = randomVector(static_cast<size_t>(M) * N, rng);
  std::vector<float> C = C0;
  cpu::gemm(transA, transB, M, N, K, alpha, A.data(), B.data(), beta, C.data());

  for (int i = 0; i < M; ++i) {
    for (int j = 0; j < N; ++j) {
      double sum = 0.0;
      double abs_sum = 0.0;
      for (int k = 0; k < K; ++k) {
        const double a = transA ? A[static_cast<size_t>(k) * M + i] : A[static_cast<size_t>(i) * K + k];
        const double b = transB ? B[static_cast<size_t>(j) * K + k] : B[static_cast<size_t>(k) * N + j];
        sum += a * b;
        abs_sum += std::fabs(a * b);
      }
      const double c0 = C0[static_cast<size_t>(i) * N + j];
      const double ref = alpha * sum + beta * c0;
      // fp32 dot products of K terms err by at most ~K*u*sum|ab| (u = 2^-24); allow
      // (K+2)*FLT_EPSILON (= 2u) on the whole magnitude incl. the alpha/beta terms.
      const double tol =
          (K + 2) * FLT_EPSILON * (std::fabs(alpha) * abs_sum + std::fabs(beta * c0)) + 1e-30;
      const double got = C[static_cast<size_t>(i) * N + j];
      if (std::fabs(got - ref) > tol) {
        QFAIL(qPrintable(QString("C[%1,%2] = %3, reference %4, tol %5")
                             .arg(i).arg(j).arg(got, 0, 'g', 9).arg(ref, 0, 'g', 9).arg(tol)));
      }
    }
  }
}

void TestKernels::gemmRejectsNegativeSize() {
  float a = 0, b = 0, c = 0;
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           cpu::gemm(false, false, -1, 1, 1, 1.0f, &a, &b, 0.0f, &c));
}

void TestKernels::biasAddAndGrad() {
  const int rows = 3, cols = 4;
  std::vector<float> y = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  const std::vector<float> bias = {100, 200, 300, 400};
  cpu::addBias(y.data(), bias.data(), rows, cols);
  for (int r = 0; r < rows; ++r) {
    for (int c = 0; c < cols; ++c) QCOMPARE(y[r * cols + c], float(r * cols + c) + bias[c]);
  }
  std::vector<float> dbias(cols, -7.0f);  // garbage: biasGrad overwrites
  const std::vector<float> dy = {0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11};
  cpu::biasGrad(dy.data(), dbias.data(), rows, cols);
  const std::vector<float> expected = {12, 15, 18, 21};  // small integers: exact in fp32
  QCOMPARE(dbias, expected);
}

void TestKernels::layerNormForward_data() {
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::newRow("1x2") << 1 << 2;
  QTest::newRow("4x8") << 4 << 8;
  QTest::newRow("3x64") << 3 << 64;
  QTest::newRow("2x257") << 2 << 257;
  QTest::newRow("16x768") << 16 << 768;
}

void TestKernels::layerNormForward() {
  QFETCH(int, rows);
  QFETCH(int, cols);
  std::mt19937 rng(static_cast<unsigned>(rows * 1000 + cols));
  // Offset mean and scale so the mean subtraction and rstd are both exercised.
  const std::vector<float> x = randomVector(static_cast<size_t>(rows) * cols, rng, 1.0f, 5.0f);
  const std::vector<float> gamma = randomVector(cols, rng, 0.5f, 1.5f);
  const std::vector<float> beta = randomVector(cols, rng, -0.5f, 0.5f);
  std::vector<float> y(x.size()), mean(rows), rstd(rows);
  cpu::layerNormForward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                        rows, cols);

  std::vector<double> ref, ref_mean(rows), ref_rstd(rows);
  referenceLayerNorm(toDouble(x), toDouble(gamma), toDouble(beta), ref, rows, cols, 1e-5,
                     &ref_mean, &ref_rstd);
  // fp32 sums over `cols` terms lose at most ~cols*u relative; 2*cols*FLT_EPSILON (=4*cols*u)
  // covers mean, variance and the normalised output (which is O(few)).
  const double rel = 2.0 * cols * FLT_EPSILON;
  for (int r = 0; r < rows; ++r) {
    QVERIFY(std::fabs(mean[r] - ref_mean[r]) <= rel * std::fabs(ref_mean[r]));
    QVERIFY(std::fabs(rstd[r] - ref_rstd[r]) <= rel * ref_rstd[r]);
  }
  for (size_t i = 0; i < y.size(); ++i) {
    const double tol = rel * (1.0 + std::fabs(ref[i]));
    if (std::fabs(y[i] - ref[i]) > tol) {
      QFAIL(qPrintable(QString("y[%1] = %2, reference %3").arg(i).arg(y[i]).arg(ref[i])));
    }
  }
}

void TestKernels::layerNormBackward_data() {
  QTest::addColumn<int>("rows");
  QTest::addColumn<int>("cols");
  QTest::newRow("1x2") << 1 << 2;
  QTest::newRow("2x5") << 2 << 5;
  QTest::newRow("3x16") << 3 << 16;
  QTest::newRow("4x64") << 4 << 64;
}

void TestKernels::layerNormBackward() {
  QFETCH(int, rows);
  QFETCH(int, cols);
  std::mt19937 rng(static_cast<unsigned>(rows * 7919 + cols));
  const size_t n = static_cast<size_t>(rows) * cols;
  const std::vector<float> x = randomVector(n, rng, -2.0f, 3.0f);
  const std::vector<float> gamma = randomVector(cols, rng, 0.5f, 1.5f);
  const std::vector<float> beta = randomVector(cols, rng, -0.5f, 0.5f);
  const std::vector<float> dy = randomVector(n, rng);
  std::vector<float> y(n), mean(rows), rstd(rows);
  cpu::layerNormForward(x.data(), gamma.data(), beta.data(), y.data(), mean.data(), rstd.data(),
                        rows, cols);
  std::vector<float> dx(n, 99.0f), dgamma(cols, 99.0f), dbeta(cols, 99.0f);  // overwritten
  cpu::layerNormBackward(dy.data(), x.data(), gamma.data(), mean.data(), rstd.data(), dx.data(),
                         dgamma.data(), dbeta.data(), rows, cols);

  // Scalar loss L = sum(dy * LN(x, gamma, beta)), so dL/d(input) is the backward's output.
  std::vector<double> xd = toDouble(x), gd = toDouble(gamma), bd = toDouble(beta);
  const std::vector<double> dyd = toDouble(dy);
  std::vector<double> out;
  auto loss = [&]() {
    referenceLayerNorm(xd, gd, bd, out, rows, cols, 1e-5);
    double s = 0.0;
    for (size_t i = 0; i < n; ++i) s += dyd[i] * out[i];
    return s;
  };
  // Central differences in double with h = 1e-5: truncation O(h^2) ~ 1e-10, rounding
  // ~1e-16/h ~ 1e-11, so the numeric gradient is good to ~1e-9.
  const double h = 1e-5;
  auto numeric = [&](std::vector<double>& param, size_t i) {
    const double saved = param[i];
    param[i] = saved + h;
    const double up = loss();
    param[i] = saved - h;
    const double down = loss();
    param[i] = saved;
    return (up - down) / (2.0 * h);
  };
  // The analytic side is fp32: each gradient is a sum over rows or cols of O(1) terms
  // with cancellation (dnorm - mean - norm*mean), so allow 8*(cols+rows)*FLT_EPSILON
  // relative to (1 + |gradient|): ~6e-5 at 4x64, far below any formula error (O(1)).
  const double rel = 8.0 * (cols + rows) * FLT_EPSILON;
  auto check = [&](const char* what, const std::vector<float>& got, std::vector<double>& param) {
    for (size_t i = 0; i < got.size(); ++i) {
      const double want = numeric(param, i);
      if (std::fabs(got[i] - want) > rel * (1.0 + std::fabs(want))) {
        QFAIL(qPrintable(QString("%1[%2] = %3, finite difference %4")
                             .arg(what).arg(i).arg(got[i], 0, 'g', 9).arg(want, 0, 'g', 9)));
      }
    }
  };
  check("dx", dx, xd);
  check("dgamma", dgamma, gd);
  check("dbeta", dbeta, bd);
}

void TestKernels::geluForward() {
  std::vector<float> x;
  for (int i = -400; i <= 400; ++i) x.push_back(static_cast<float>(i) * 0.025f);  // [-10, 10]
  for (float v : {-30.0f, -15.0f, 15.0f, 30.0f, 1e-7f, -1e-7f}) x.push_back(v);
  std::vector<float> y(x.size());
  cpu::geluForward(x.data(), y.data(), x.size());
  for (size_t i = 0; i < x.size(); ++i) {
    const double want = referenceGelu(x[i]);
    // fp32 tanh is within a few ulp of 1 (~1e-7 absolute), scaled by 0.5|x| in the
    // output; plus the output's own rounding: 4*FLT_EPSILON*(1+|x|) bounds both.
    const double tol = 4.0 * FLT_EPSILON * (1.0 + std::fabs(x[i]));
    if (std::fabs(y[i] - want) > tol) {
      QFAIL(qPrintable(QString("gelu(%1) = %2, reference %3").arg(x[i]).arg(y[i]).arg(want)));
    }
  }
  // Pinned value, so a wrong constant shared by kernel and reference is still caught:
  // 0.5 * (1 + tanh(sqrt(2/pi) * 1.044715)) = 0.84119199061 at x = 1.
  QCOMPARE(x[440], 1.0f);
  QVERIFY(std::fabs(y[440] - 0.84119199061) < 1e-6);  // 1e-6 ~ 8 fp32 ulp at 0.84
}

void TestKernels::geluBackward() {
  std::vector<float> x;
  for (int i = -400; i <= 400; ++i) x.push_back(static_cast<float>(i) * 0.025f);
  for (float v : {-30.0f, 30.0f, 1e-7f}) x.push_back(v);
  std::mt19937 rng(11);
  const std::vector<float> dy = randomVector(x.size(), rng, -2.0f, 2.0f);
  std::vector<float> dx(x.size(), 99.0f);
  cpu::geluBackward(x.data(), dy.data(), dx.data(), x.size());
  const double h = 1e-6;  // double central difference: error ~h^2*|f'''| + 1e-16/h ~ 1e-10
  for (size_t i = 0; i < x.size(); ++i) {
    const double xi = x[i];
    const double want = dy[i] * (referenceGelu(xi + h) - referenceGelu(xi - h)) / (2.0 * h);
    // fp32 t = tanh(u) is off by ~1e-7; d/dx multiplies (1 - t^2) by 0.5*|x|*du/dx,
    // which is <= ~10 while (1 - t^2) is above fp32 resolution (|x| < ~5.5), so the
    // error stays near 1e-6 (5e-7 measured); 2e-6 per unit |dy| leaves headroom.
    const double tol = 2e-6 * (1.0 + std::fabs(dy[i]));
    if (std::fabs(dx[i] - want) > tol) {
      QFAIL(qPrintable(QString("gelu'(%1)*dy = %2, finite difference %3")
                           .arg(x[i]).arg(dx[i], 0, 'g', 9).arg(want, 0, 'g', 9)));
    }
  }
}

void TestKernels::mseLoss() {
  const int rows = 3, cols = 5, total_rows = 12;  // this rank holds 3 of 12 rows
  std::mt19937 rng(5);
  const std::vector<float> pred = randomVector(rows * cols, rng, -3.0f, 3.0f);
  const std::vector<float> target = randomVector(rows * cols, rng, -3.0f, 3.0f);
  std::vector<float> dpred(rows * cols, 99.0f);
  const double loss =
      cpu::mseLoss(pred.data(), target.data(), dpred.data(), rows, cols, total_rows);
  double sum = 0.0;
  for (int i = 0; i < rows * cols; ++i) {
    const double d = static_cast<double>(pred[i]) - target[i];
    sum += d * d;
  }
  const double denom = static_cast<double>(total_rows) * cols;
  // The kernel forms pred-target in fp32 (relative error <= u per term) and sums in
  // double, so the loss is within 2*FLT_EPSILON relative of the exact one.
  QVERIFY(std::fabs(loss - sum / denom) <= 2.0 * FLT_EPSILON * (sum / denom));
  for (int i = 0; i < rows * cols; ++i) {
    const double want = 2.0 * (static_cast<double>(pred[i]) - target[i]) / denom;
    // fp32 difference and one fp32 multiply: two roundings, 2*FLT_EPSILON relative.
    QVERIFY2(std::fabs(dpred[i] - want) <= 2.0 * FLT_EPSILON * std::fabs(want),
             qPrintable(QString("dpred[%1] = %2, want %3").arg(i).arg(dpred[i]).arg(want)));
  }
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           cpu::mseLoss(pred.data(), target.data(), dpred.data(), rows, cols, 2));
}

void TestKernels::mseLossSlicesSumToFullBatch() {
  // The header's contract: per-slice losses and gradients with total_rows = full batch
  // equal the full-batch ones (the mean all-reduce then sums them).
  const int total_rows = 8, cols = 6, slices = 4, slice_rows = total_rows / slices;
  std::mt19937 rng(9);
  const std::vector<float> pred = randomVector(total_rows * cols, rng);
  const std::vector<float> target = randomVector(total_rows * cols, rng);
  std::vector<float> full_grad(total_rows * cols), sliced_grad(total_rows * cols);
  const double full = cpu::mseLoss(pred.data(), target.data(), full_grad.data(), total_rows,
                                   cols, total_rows);
  double sliced = 0.0;
  for (int s = 0; s < slices; ++s) {
    const size_t off = static_cast<size_t>(s) * slice_rows * cols;
    sliced += cpu::mseLoss(pred.data() + off, target.data() + off, sliced_grad.data() + off,
                           slice_rows, cols, total_rows);
  }
  QVERIFY(std::fabs(full - sliced) <= 1e-15 * full);  // same double terms, regrouped sum
  QCOMPARE(sliced_grad, full_grad);  // elementwise, identical fp32 arithmetic
}

void TestKernels::adamStep_data() {
  QTest::addColumn<float>("lr");
  QTest::addColumn<float>("weightDecay");
  QTest::addColumn<bool>("writeParam");
  QTest::newRow("default") << 1e-3f << 0.0f << true;
  QTest::newRow("weight decay") << 1e-2f << 0.1f << true;
  QTest::newRow("no param out") << 3e-2f << 0.01f << false;
}

void TestKernels::adamStep() {
  QFETCH(float, lr);
  QFETCH(float, weightDecay);
  QFETCH(bool, writeParam);
  cpu::AdamConfig config;
  config.lr = lr;
  config.weight_decay = weightDecay;
  const size_t n = 257;
  std::mt19937 rng(3);
  std::vector<float> master = randomVector(n, rng, -2.0f, 2.0f);
  std::vector<float> m(n, 0.0f), v(n, 0.0f);
  std::vector<double> ref_p(master.begin(), master.end()), ref_m(n, 0.0), ref_v(n, 0.0);
  std::vector<double> ref_m_abs(n, 0.0);  // m with |g|: the scale m's rounding error is relative to
  std::vector<bf16> param(n, bf16{0x7fc0});  // NaN so an unwritten slot is caught
  const double b1 = config.beta1, b2 = config.beta2, eps = config.eps;

  for (int step = 1; step <= 3; ++step) {
    std::vector<float> g32 = randomVector(n, rng, -1.0f, 1.0f);
    g32[0] = 0.0f;                // zero gradient: update driven by eps and decay only
    g32[1] = 1e-6f * step;        // tiny gradient: eps matters in the denominator
    std::vector<bf16> grad(n);
    cpu::f32ToBf16(g32.data(), grad.data(), n);
    cpu::adamStep(master.data(), m.data(), v.data(), grad.data(),
                  writeParam ? param.data() : nullptr, n, config, step);
    // torch.optim.AdamW, in double, on the same bf16 gradient values.
    for (size_t i = 0; i < n; ++i) {
      const double g = toFloat(grad[i]);
      ref_p[i] -= static_cast<double>(lr) * weightDecay * ref_p[i];
      ref_m[i] = b1 * ref_m[i] + (1.0 - b1) * g;
      ref_m_abs[i] = b1 * ref_m_abs[i] + (1.0 - b1) * std::fabs(g);
      ref_v[i] = b2 * ref_v[i] + (1.0 - b2) * g * g;
      const double mhat = ref_m[i] / (1.0 - std::pow(b1, step));
      const double vhat = ref_v[i] / (1.0 - std::pow(b2, step));
      ref_p[i] -= lr * mhat / (std::sqrt(vhat) + eps);
    }
    for (size_t i = 0; i < n; ++i) {
      // m and v: a few fp32 roundings per step, compounded over 3 steps -> 8*FLT_EPSILON,
      // relative to the magnitude of the terms (m can cancel towards 0 when g flips sign).
      QVERIFY(std::fabs(m[i] - ref_m[i]) <= 8.0 * FLT_EPSILON * ref_m_abs[i] + 1e-30);
      QVERIFY(std::fabs(v[i] - ref_v[i]) <= 8.0 * FLT_EPSILON * std::fabs(ref_v[i]) + 1e-30);
      // Each step rounds p (u*|p|) and forms an update of size <= ~lr with a few
      // roundings; 3 steps stay under 8*FLT_EPSILON*(|p| + lr).
      const double tol = 8.0 * FLT_EPSILON * (std::fabs(ref_p[i]) + lr);
      if (std::fabs(master[i] - ref_p[i]) > tol) {
        QFAIL(qPrintable(QString("step %1 master[%2] = %3, reference %4")
                             .arg(step).arg(i).arg(master[i], 0, 'g', 9).arg(ref_p[i], 0, 'g', 9)));
      }
      if (writeParam) QCOMPARE(param[i].bits, toBf16(master[i]).bits);
    }
  }
  if (!writeParam) QCOMPARE(param[0].bits, uint16_t{0x7fc0});  // null param_out: untouched
  std::vector<bf16> grad(1);
  QVERIFY_THROWS_EXCEPTION(std::invalid_argument,
                           cpu::adamStep(master.data(), m.data(), v.data(), grad.data(), nullptr,
                                         1, config, 0));
}

void TestKernels::addBf16InPlace() {
  // Explicit ties: 1 + 2^-8 is halfway between bf16 1.0 and 1.0078125 -> even (1.0);
  // 1.0078125 + 2^-8 is halfway between 0x3f81 and 0x3f82 -> even (0x3f82).
  std::vector<bf16> y = {bf16{0x3f80}, bf16{0x3f81}, bf16{0x3f80}};
  const std::vector<bf16> x = {toBf16(0.00390625f), toBf16(0.00390625f), toBf16(-1.0f)};
  cpu::addBf16InPlace(y.data(), x.data(), y.size());
  QCOMPARE(y[0].bits, uint16_t{0x3f80});
  QCOMPARE(y[1].bits, uint16_t{0x3f82});
  QCOMPARE(y[2].bits, uint16_t{0x0000});

  // Random values whose exponents differ by < 16, so the fp32 sum is exact and the
  // result must equal RNE of the exact (double) sum.
  std::mt19937 rng(21);
  std::uniform_real_distribution<float> mant(1.0f, 2.0f);
  std::uniform_int_distribution<int> expo(-6, 6);
  std::uniform_int_distribution<int> sign(0, 1);
  const size_t n = 20000;
  std::vector<bf16> a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = toBf16((sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), expo(rng)));
    b[i] = toBf16((sign(rng) ? -1.0f : 1.0f) * std::ldexp(mant(rng), expo(rng)));
  }
  std::vector<bf16> sum = a;
  cpu::addBf16InPlace(sum.data(), b.data(), n);
  for (size_t i = 0; i < n; ++i) {
    const double exact = static_cast<double>(toFloat(a[i])) + toFloat(b[i]);
    QCOMPARE(sum[i].bits, referenceBf16(exact));
  }
}

void TestKernels::scaleBf16InPlace() {
  // 1.0078125 * 1.5 = 1.51171875 = 193.5 bf16 steps of 2^-7 -> tie, even is 194.
  std::vector<bf16> tie = {bf16{0x3f81}};
  cpu::scaleBf16InPlace(tie.data(), 1.5f, 1);
  QCOMPARE(tie[0].bits, uint16_t{0x3fc2});

  // bf16 * bf16-representable scale has <= 16 significant bits, so the fp32 product is
  // exact and the result must equal RNE of the exact product.
  std::mt19937 rng(4);
  const std::vector<float> y32 = randomVector(5000, rng, -100.0f, 100.0f);
  std::vector<bf16> y0(y32.size());
  cpu::f32ToBf16(y32.data(), y0.data(), y32.size());
  for (float s : {0.5f, 0.125f, -3.0f, 1.5f, toFloat(toBf16(1.0f / 3.0f)), 0.0f}) {
    std::vector<bf16> y = y0;
    cpu::scaleBf16InPlace(y.data(), s, y.size());
    for (size_t i = 0; i < y.size(); ++i) {
      const double exact = static_cast<double>(toFloat(y0[i])) * s;
      const uint16_t want = referenceBf16(exact);
      // s = 0 on a negative y gives -0 on both sides (the sign rides through the float bits).
      QCOMPARE(y[i].bits, want);
    }
  }
}

QTEST_APPLESS_MAIN(TestKernels)
#include "test_kernels.moc"
