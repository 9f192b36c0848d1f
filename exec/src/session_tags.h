#pragma once
// The tags of the session's own messages (session.h: the handshake, the
// clock, the resume step, the gather of results), in one place so that
// session.cpp and run_results.cpp never pick the same one. Above every tag a
// transfer of the pipeline uses (stage_wire.h).
namespace splitsim::session_tags {

inline constexpr int kTagHello = (1 << 26) + 1;
inline constexpr int kTagVerdict = (1 << 26) + 2;
inline constexpr int kTagGo = (1 << 26) + 3;
inline constexpr int kTagPing = (1 << 26) + 4;
inline constexpr int kTagPong = (1 << 26) + 5;
inline constexpr int kTagSizes = (1 << 26) + 6;
inline constexpr int kTagEvents = (1 << 26) + 7;
inline constexpr int kTagStats = (1 << 26) + 8;
inline constexpr int kTagClock = (1 << 26) + 9;
inline constexpr int kTagSteps = (1 << 26) + 10;
inline constexpr int kTagResume = (1 << 26) + 11;

}  // namespace splitsim::session_tags
