#include "splitsim/costmodel/library_logs.h"

#include <glog/logging.h>

namespace splitsim {

void quiet_library_logs() {
  FLAGS_logtostderr = true;  // glog would write log files under /tmp otherwise
  FLAGS_minloglevel = google::GLOG_ERROR;
  if (!google::IsGoogleLoggingInitialized()) google::InitGoogleLogging("splitsim");
}

}  // namespace splitsim
