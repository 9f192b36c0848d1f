#pragma once
// LibTorch logs through glog (c10's LOG(WARNING), TORCH_WARN's default
// handler): lines such as "WARNING: Logging before InitGoogleLogging() ...
// CPUAllocator.cpp:231] Memory block of unknown size ..." that mean nothing
// to a user of splitsim. No LibTorch in this header.

namespace splitsim {

// Lets only errors of LibTorch's log reach stderr (glog's minloglevel
// ERROR, to stderr, never to log files). Call once, first thing in main.
void quiet_library_logs();

}  // namespace splitsim
