#include "splitsim/costmodel/heap.h"

#include <climits>  // also defines __GLIBC__ where glibc is the C library
#include <mutex>

#if defined(__GLIBC__)
#include <malloc.h>
#endif

namespace splitsim {

void hold_freed_heap_memory() {
#if defined(__GLIBC__)
  static std::once_flag once;
  std::call_once(once, [] {
    // The largest threshold glibc accepts (HEAP_MAX_SIZE / 2 on 64 bits);
    // setting it also stops glibc from moving the threshold on its own.
    mallopt(M_MMAP_THRESHOLD, 32 * 1024 * 1024);
    mallopt(M_TRIM_THRESHOLD, INT_MAX);
  });
#endif
}

}  // namespace splitsim
