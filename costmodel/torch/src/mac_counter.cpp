#include "splitsim/costmodel/mac_counter.h"

#include <cassert>
#include <cstring>
#include <string_view>
#include <unordered_set>

#include <ATen/record_function.h>
#include <torch/torch.h>

// How ops are counted (costmodel/README.md "How the cost model counts"):
//  - Only the outermost observed op counts; everything it calls is ignored
//    (conv2d -> convolution -> _convolution -> mkldnn_convolution counts once).
//  - Composite ops that only dispatch to counted ops (linear, matmul, conv2d)
//    are transparent: they neither count nor hide what they call.
//  - convolution / convolution_backward / mm / addmm / bmm / baddbmm / mv are
//    MACs, from their input shapes; convolution_backward honours output_mask.
//  - View and allocation ops count nothing.
//  - Every other op counts the elements of its first tensor input (or of its
//    tensor list) as element-wise work; embeddings count looked-up elements.
// State is thread-local: the callback is thread-local too, and LibTorch runs
// CPU autograd on the thread that calls backward().

namespace splitsim {
namespace {

struct State {
  OpCounts* counts = nullptr;
  int depth = 0;  // > 0 while inside an observed, non-transparent op
};
thread_local State tls;

// The context returned for every op that increments depth.
struct Marker : at::ObserverContext {};

bool in_set(const char* name, const std::unordered_set<std::string_view>& set) {
  return set.count(std::string_view(name)) > 0;
}

const std::unordered_set<std::string_view>& transparent_ops() {
  static const std::unordered_set<std::string_view> s = {
      "aten::linear",       "aten::matmul",           "aten::conv1d",
      "aten::conv2d",       "aten::conv3d",           "aten::conv_transpose1d",
      "aten::conv_transpose2d", "aten::conv_transpose3d", "aten::einsum",
      "aten::_convolution_mode", "aten::bilinear"};
  return s;
}

const std::unordered_set<std::string_view>& free_ops() {
  static const std::unordered_set<std::string_view> s = {
      "aten::view",      "aten::reshape",    "aten::_reshape_alias", "aten::_unsafe_view",
      "aten::t",         "aten::transpose",  "aten::permute",        "aten::expand",
      "aten::expand_as", "aten::slice",      "aten::select",         "aten::unsqueeze",
      "aten::squeeze",   "aten::flatten",    "aten::unflatten",      "aten::detach",
      "aten::detach_",   "aten::alias",      "aten::as_strided",     "aten::size",
      "aten::stride",    "aten::empty",      "aten::empty_like",     "aten::empty_strided",
      "aten::zeros",     "aten::zeros_like", "aten::resize_",        "aten::set_",
      "aten::narrow",    "aten::split",      "aten::chunk",          "aten::unbind",
      "aten::lift_fresh", "aten::numpy_T",   "aten::item",           "aten::_local_scalar_dense",
      "aten::is_nonzero", "aten::result_type", "aten::requires_grad_", "aten::dim",
      "aten::_has_compatible_shallow_copy_type", "aten::is_same_size", "aten::new_empty",
      "aten::new_empty_strided", "aten::new_zeros", "aten::scalar_tensor", "aten::ones"};
  return s;
}

int64_t prod_from(c10::IntArrayRef sizes, size_t first) {
  int64_t p = 1;
  for (size_t i = first; i < sizes.size(); ++i) p *= sizes[i];
  return p;
}

int64_t numel_of(const c10::IValue& v) {
  if (v.isTensor()) return v.toTensor().defined() ? v.toTensor().numel() : 0;
  if (v.isTensorList()) {
    int64_t n = 0;
    for (const at::Tensor& t : v.toTensorList().vec()) n += t.numel();
    return n;
  }
  return 0;
}

// Adds MACs of one convolution (forward shape) to the right class.
void add_conv(OpCounts& c, const at::Tensor& input, const at::Tensor& weight,
              c10::IntArrayRef out_or_in_spatial_sizes, int64_t groups, int64_t factor) {
  const int64_t macs =
      input.size(0) * prod_from(out_or_in_spatial_sizes, 2) * weight.numel() * factor;
  const bool depthwise = groups > 1 && groups == input.size(1);
  (depthwise ? c.depthwise_macs : c.conv_macs) += macs;
}

void count_convolution(OpCounts& c, c10::ArrayRef<const c10::IValue> in) {
  // convolution(input, weight, bias, stride, padding, dilation, transposed, output_padding, groups)
  const at::Tensor& x = in[0].toTensor();
  const at::Tensor& w = in[1].toTensor();
  const bool transposed = in[6].toBool();
  const int64_t groups = in[8].toInt();
  if (transposed) {
    add_conv(c, x, w, x.sizes(), groups, 1);
    return;
  }
  const auto stride = in[3].toIntVector(), padding = in[4].toIntVector(),
             dilation = in[5].toIntVector();
  std::vector<int64_t> out(x.sizes().begin(), x.sizes().end());
  for (size_t d = 2; d < out.size(); ++d) {
    const size_t i = d - 2;
    const int64_t k = w.size(d);
    out[d] = (x.size(d) + 2 * padding[i] - dilation[i] * (k - 1) - 1) / stride[i] + 1;
  }
  add_conv(c, x, w, out, groups, 1);
}

void count_convolution_backward(OpCounts& c, c10::ArrayRef<const c10::IValue> in) {
  // convolution_backward(grad_output, input, weight, bias_sizes, stride, padding,
  //                      dilation, transposed, output_padding, groups, output_mask)
  const at::Tensor& gy = in[0].toTensor();
  const at::Tensor& x = in[1].toTensor();
  const at::Tensor& w = in[2].toTensor();
  const bool transposed = in[7].toBool();
  const int64_t groups = in[9].toInt();
  const c10::List<bool> mask = in[10].toBoolList();
  const int64_t factor = (mask.get(0) ? 1 : 0) + (mask.get(1) ? 1 : 0);
  add_conv(c, x, w, transposed ? x.sizes() : gy.sizes(), groups, factor);
  if (mask.get(2)) c.elementwise_elems += gy.numel();
}

int64_t mm_macs(const at::Tensor& a, const at::Tensor& b) {
  // a [..., m, k] @ b [..., k, n]
  return prod_from(a.sizes(), 0) * b.size(-1);
}

std::unique_ptr<at::ObserverContext> on_start(const at::RecordFunction& fn) {
  State& s = tls;
  if (s.counts == nullptr) return nullptr;
  if (s.depth > 0) {
    ++s.depth;
    return std::make_unique<Marker>();
  }
  const char* name = fn.name();
  if (std::strncmp(name, "aten::", 6) != 0) return nullptr;
  if (in_set(name, transparent_ops())) return nullptr;
  ++s.depth;
  if (in_set(name, free_ops())) return std::make_unique<Marker>();

  OpCounts& c = *s.counts;
  ++c.ops;
  const auto in = fn.inputs();
  const std::string_view op(name);
  if (op == "aten::convolution" || op == "aten::_convolution") {
    count_convolution(c, in);
  } else if (op == "aten::convolution_backward") {
    count_convolution_backward(c, in);
  } else if (op == "aten::mm" || op == "aten::bmm") {
    c.matmul_macs += mm_macs(in[0].toTensor(), in[1].toTensor());
  } else if (op == "aten::addmm" || op == "aten::baddbmm" || op == "aten::addbmm") {
    c.matmul_macs += mm_macs(in[1].toTensor(), in[2].toTensor());
  } else if (op == "aten::mv") {
    c.matmul_macs += in[0].toTensor().numel();
  } else if (op == "aten::addmv") {
    c.matmul_macs += in[1].toTensor().numel();
  } else if (op == "aten::embedding") {
    const at::Tensor& w = in[0].toTensor();
    c.elementwise_elems += in[1].toTensor().numel() * w.size(1);
  } else if (!in.empty()) {
    c.elementwise_elems += numel_of(in[0]);
  }
  return std::make_unique<Marker>();
}

void on_end(const at::RecordFunction&, at::ObserverContext* ctx) {
  if (ctx != nullptr) --tls.depth;
}

}  // namespace

MacCounter::MacCounter() {
  assert(tls.counts == nullptr && "one MacCounter per thread");
  tls.counts = &counts_;
  tls.depth = 0;
  handle_ = at::addThreadLocalCallback(at::RecordFunctionCallback(&on_start, &on_end)
                                           .needsInputs(true)
                                           .scopes({at::RecordScope::FUNCTION}));
}

MacCounter::~MacCounter() {
  at::removeCallback(handle_);
  tls.counts = nullptr;
}

OpCounts MacCounter::counts() const { return counts_; }

void MacCounter::reset() { counts_ = OpCounts(); }

}  // namespace splitsim
