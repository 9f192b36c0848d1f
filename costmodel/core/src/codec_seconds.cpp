#include "codec_seconds.h"

#include <string>

#include "splitsim/costmodel/codec.h"

namespace splitsim {

namespace {

// Codec MACs land in the op class of the module doing them.
OpCounts codec_counts(const CodecSpec& codec, int64_t macs, int64_t elems) {
  OpCounts c;
  (codec.method == CodecMethod::kConvInsert ? c.conv_macs : c.matmul_macs) = macs;
  c.elementwise_elems = elems;
  // Work with nothing to do (a fixed codec's backward) runs no op.
  c.ops = codec.method == CodecMethod::kNone || (macs == 0 && elems == 0) ? 0 : 2;
  return c;
}

}  // namespace

BoundaryCodecSeconds boundary_codec_seconds(const BoundaryCodecs& codecs,
                                            const std::vector<int64_t>& shape,
                                            const std::vector<int64_t>& carried, int64_t batch,
                                            const DeviceProfile& sender,
                                            const DeviceProfile& receiver) {
  const std::string fkey = codec_to_json(codecs.forward).dump();
  const std::string bkey = codec_to_json(codecs.backward).dump();
  const CodecWork fw = codec_work(codecs.forward, shape, batch);
  const CodecWork bw = codec_work(codecs.backward, carried, batch);
  const CodecTiming* fs = sender.codec_timing_for(fkey, shape, batch);
  const CodecTiming* fr = receiver.codec_timing_for(fkey, shape, batch);
  const CodecTiming* br = receiver.codec_timing_for(bkey, carried, batch);
  const CodecTiming* bs = sender.codec_timing_for(bkey, carried, batch);
  const auto formula = [](const DeviceProfile& dev, const CodecSpec& codec, int64_t macs,
                          int64_t elems) {
    return formula_seconds(dev, codec_counts(codec, macs, elems));
  };
  BoundaryCodecSeconds s;
  s.encode = fs ? fs->encode_s : formula(sender, codecs.forward, fw.encode_macs, fw.encode_elems);
  s.decode = fr ? fr->decode_s : formula(receiver, codecs.forward, fw.decode_macs, fw.decode_elems);
  s.grad_encode =
      br ? br->encode_s : formula(receiver, codecs.backward, bw.encode_macs, bw.encode_elems);
  s.grad_decode =
      bs ? bs->decode_s : formula(sender, codecs.backward, bw.decode_macs, bw.decode_elems);
  s.sender_backward = fs && fs->sender_backward_s
                          ? *fs->sender_backward_s
                          : formula(sender, codecs.forward, fw.sender_backward_macs, 0);
  s.receiver_backward = fr && fr->receiver_backward_s
                            ? *fr->receiver_backward_s
                            : formula(receiver, codecs.forward, fw.receiver_backward_macs, 0);
  return s;
}

}  // namespace splitsim
