// File → Attach to run…: where a served run is (shardscope-cli run ... --serve
// ADDR) and, for any address but 127.0.0.1, the serving machine's key.
#pragma once

#include <QString>

class QWidget;

namespace shardscope {

struct AttachRequest {
  QString address;     // PORT, HOST:PORT or tcp://HOST:PORT
  QString server_key;  // "" for 127.0.0.1
};

// Asks (pre-filled with `last`); false when cancelled.
bool askAttachRequest(QWidget* parent, AttachRequest* request);

}  // namespace shardscope
