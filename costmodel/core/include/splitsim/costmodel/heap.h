#pragma once

namespace splitsim {

// Keeps memory the C allocator frees inside the process (glibc: no trimming
// of the heap's top, no mmap for blocks under 32 MiB), so that a training
// step reuses the pages of the last one instead of faulting fresh, zeroed
// pages in. Every measured training step (the profile, codec timing, exec,
// the link probe) runs under it, so that what the profile measures is what
// exec runs. Without it glibc returned a client's activations to the kernel
// after each backward and faulted them in again on the next forward: ~8,000
// minor faults (32 MB) per batch, +30% on that party's busy time (see
// exec/validate/README.md, "Page faults"). Idempotent; the peak resident
// memory stays with the process until it exits.
void hold_freed_heap_memory();

}  // namespace splitsim
