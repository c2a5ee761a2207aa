// The `devices` report: formatting of known inventories (every build), and the
// live CUDA/NCCL query (CUDA builds; the device part skips without a GPU,
// quoting the runtime's own reason).
#include <QJsonArray>
#include <QJsonDocument>
#include <QJsonObject>
#include <QRegularExpression>
#include <QtTest>

#include "cli/devices_report.h"
#ifdef SHARDSCOPE_HAVE_CUDA
#include "cuda/cuda_runtime.h"
#include "cuda/device_query.h"
#endif

using namespace shardscope;

namespace {

CudaInventory h200Inventory() {
  CudaInventory inventory;
  inventory.runtime_ok = true;
  inventory.runtime_version = 13000;
  inventory.driver_version = 13010;
  inventory.nccl_version = "2.28.9";
  CudaDeviceInfo device;
  device.index = 0;
  device.name = "NVIDIA H200";
  device.total_bytes = size_t{150} << 30;
  device.free_bytes = size_t{149} << 30;
  device.cc_major = 9;
  device.cc_minor = 0;
  device.sm_count = 132;
  device.kernel_ok = true;
  inventory.devices.push_back(device);
  return inventory;
}

QJsonObject parseJson(const std::string& text) {
  QJsonParseError error{};
  const QJsonDocument doc = QJsonDocument::fromJson(QByteArray::fromStdString(text), &error);
  if (error.error != QJsonParseError::NoError)
    qWarning("invalid JSON (%s): %s", qPrintable(error.errorString()), text.c_str());
  return doc.object();
}

}  // namespace

class TestCudaDevices : public QObject {
  Q_OBJECT

 private slots:
  void versionStrings() {
    QCOMPARE(cudaVersionString(13000), std::string("13.0"));
    QCOMPARE(cudaVersionString(12080), std::string("12.8"));
    QCOMPARE(cudaVersionString(0), std::string("none"));
  }

  void formatsDeviceTable() {
    const std::string text = formatDevicesReport(h200Inventory());
    QVERIFY2(text.find("CUDA runtime 13.0, driver 13.1, NCCL 2.28.9\n") == 0, text.c_str());
    QVERIFY2(text.find("NVIDIA H200") != std::string::npos, text.c_str());
    QVERIFY2(text.find("9.0") != std::string::npos, text.c_str());
    QVERIFY2(text.find("150.0 GiB") != std::string::npos, text.c_str());
    QVERIFY2(text.find("149.0 GiB") != std::string::npos, text.c_str());
    QVERIFY2(text.find("yes") != std::string::npos, text.c_str());

    const QJsonObject json = parseJson(formatDevicesReportJson(h200Inventory()));
    QCOMPARE(json["cuda_built"].toBool(), true);
    QCOMPARE(json["runtime_version"].toString(), QString("13.0"));
    QCOMPARE(json["nccl_version"].toString(), QString("2.28.9"));
    const QJsonArray devices = json["devices"].toArray();
    QCOMPARE(devices.size(), 1);
    const QJsonObject device = devices[0].toObject();
    QCOMPARE(device["name"].toString(), QString("NVIDIA H200"));
    QCOMPARE(device["compute_capability"].toString(), QString("9.0"));
    QCOMPARE(device["sm_count"].toInt(), 132);
    QCOMPARE(device["total_bytes"].toDouble(), 150.0 * (1 << 30));
    QCOMPARE(device["kernel_ok"].toBool(), true);
  }

  void formatsNoDeviceWithRuntimeMessage() {
    CudaInventory inventory;
    inventory.runtime_version = 13000;
    inventory.driver_version = 13000;
    inventory.nccl_version = "2.28.9";
    inventory.error = "cudaErrorNoDevice: no CUDA-capable device is detected";
    QCOMPARE(formatDevicesReport(inventory),
             std::string("CUDA runtime 13.0, driver 13.0, NCCL 2.28.9\n"
                         "no CUDA device visible: cudaErrorNoDevice: no CUDA-capable "
                         "device is detected\n"));
    // Without a driver the runtime's message is kept and a hint follows it.
    inventory.driver_version = 0;
    inventory.error = "cudaErrorInsufficientDriver: CUDA driver version is insufficient for "
                      "CUDA runtime version";
    const std::string text = formatDevicesReport(inventory);
    QVERIFY2(text.find("driver none") != std::string::npos, text.c_str());
    QVERIFY2(text.find("no CUDA device visible: " + inventory.error + "\nhint: no NVIDIA driver") !=
                 std::string::npos,
             text.c_str());
    // Quotes and control characters in library messages must not break the JSON.
    inventory.error = "bad \"quote\"\tand\nnewline \\";
    const QJsonObject json = parseJson(formatDevicesReportJson(inventory));
    QCOMPARE(json["error"].toString(), QString::fromStdString(inventory.error));
    QVERIFY(json["driver_version"].isNull());
    QCOMPARE(json["devices"].toArray().size(), 0);
  }

  void formatsBuildWithoutCuda() {
    QVERIFY(formatDevicesReport(std::nullopt).find("built without CUDA") == 0);
    QCOMPARE(parseJson(formatDevicesReportJson(std::nullopt))["cuda_built"].toBool(), false);
  }

  void liveInventory() {
#ifndef SHARDSCOPE_HAVE_CUDA
    QSKIP("built without CUDA (SHARDSCOPE_CUDA=OFF or nvcc/NCCL not found)");
#else
    gpu::registerCudaRuntime();  // this test links the backend: the report uses it in-process
    const CudaInventory inventory = queryCudaDevices();
    // The loaded libnccl must be the one nccl.h described at compile time.
    QVERIFY(QRegularExpression("^\\d+\\.\\d+\\.\\d+$")
                .match(QString::fromStdString(inventory.nccl_version))
                .hasMatch());
    QCOMPARE(inventory.nccl_version, compiledNcclVersion());
    QVERIFY(inventory.runtime_version >= 11000);

    const std::string text = devicesReport();
    QVERIFY2(text.find("NCCL " + inventory.nccl_version) != std::string::npos, text.c_str());
    const QJsonObject json = parseJson(devicesReportJson());
    QCOMPARE(json["nccl_version"].toString(), QString::fromStdString(inventory.nccl_version));

    if (inventory.devices.empty()) {
      QVERIFY2(!inventory.error.empty(), "no device and no reason from the runtime");
      QVERIFY2(text.find(inventory.error) != std::string::npos, text.c_str());
      QSKIP(qPrintable("no CUDA device visible: " + QString::fromStdString(inventory.error)));
    }
    for (const CudaDeviceInfo& device : inventory.devices) {
      QVERIFY2(device.error.empty(), device.error.c_str());
      QVERIFY(device.total_bytes > 0);
      QVERIFY(device.free_bytes <= device.total_bytes);
      QVERIFY(device.sm_count > 0);
      QVERIFY(device.kernel_ok);
    }
    QCOMPARE(json["devices"].toArray().size(), static_cast<qsizetype>(inventory.devices.size()));
#endif
  }
};

QTEST_GUILESS_MAIN(TestCudaDevices)
#include "test_cuda_devices.moc"
