#pragma once
// Writing files the user names (-o, --report, --trace, --emit-best, the
// profile cache): every output flag goes through here. An output replaces
// only a regular file, or creates one where nothing is: a FIFO, a device, a
// socket, a directory or a symbolic link at the path is refused and left as
// it is (never opened, so a FIFO without a reader cannot block the writer).
// The text goes to a fresh temporary file beside the path, is flushed to
// disk and renamed over it: a failure (a full disk, an unwritable
// directory) leaves the old file whole. Every refusal and failure is an
// InputError naming the flag, the path and the reason (exit code 2).
#include <functional>
#include <iosfwd>
#include <string>

namespace splitsim {

// Throws InputError(flag, ...) unless `path` can be written: nothing there,
// or a regular file, in an existing directory this process may write into.
// Commands call it before long work, so that a bad path fails at once;
// write_output_file checks again.
void check_output_path(const std::string& path, const std::string& flag);

// Writes `text` to `path` (check_output_path, then temporary file, fsync,
// rename, fsync of the directory). The temporary file is created with
// O_EXCL | O_NOFOLLOW, so a link planted at its name is not followed.
// Throws InputError(flag, ...); `path` is then untouched and the temporary
// file removed.
void write_output_file(const std::string& path, const std::string& text, const std::string& flag);

// The same with the content streamed by `write` (a trace too large to hold
// twice in memory). A stream error while writing fails the whole write.
void write_output_stream(const std::string& path, const std::string& flag,
                         const std::function<void(std::ostream&)>& write);

}  // namespace splitsim
