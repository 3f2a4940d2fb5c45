// attention_cudnn.hpp — the 16-bit attention calls that cuDNN's fused scaled-dot-product attention
// runs (attention_cudnn.cpp, through NVIDIA's cudnn-frontend, third_party/cudnn-frontend), for
// attention.cu, which runs everything else.
#pragma once

#include "ops.hpp"

#include <nnplug/kit/attention.hpp>

#include <string>

namespace nnp::cuda {

// Why cuDNN's fused attention cannot take a call of this geometry and dtype before asking cuDNN
// (the empty string: it may): the dtype is not float16/bfloat16, there is an additive mask, D or
// Dv is not a multiple of 8 or above 128, or an operand is not 16-byte aligned. The pointers are
// those the call passes (any of them may be checked for alignment; NULL ones are skipped).
std::string cudnn_attention_refusal(elem t, const nnp::kit::attention_geometry& g, bool has_mask,
                                    std::initializer_list<const void*> operands);

// Queues the forward on cuDNN: y (Q's dtype, the geometry's layout) and, when stats is not NULL,
// each query row's log-sum-exp in float32 at stats [B, Hq, Tq] (compact). has_mask: the call has
// an additive mask (which cuDNN is not given: the call is refused). Returns the empty string when
// it ran, else why cuDNN did not take the call (nothing was queued; cudnn_attention_refusal's
// reasons first). Throws only for errors of a call cuDNN accepted (a failed execution).
std::string attention_forward_cudnn(stream& s, elem t, const nnp::kit::attention_geometry& g,
                                    const void* q, const void* k, const void* v, bool has_mask,
                                    void* y, float* stats);
// The backward: dq, dk, dv (Q's, K's, V's dtype and layout) from q, k, v, the forward's y, dy and
// its log-sum-exp in float32 (stats [B, Hq, Tq], compact). Same return and throws as the forward.
std::string attention_backward_cudnn(stream& s, elem t, const nnp::kit::attention_geometry& g,
                                     const void* q, const void* k, const void* v, bool has_mask,
                                     const void* y, const void* dy, const float* stats, void* dq,
                                     void* dk, void* dv);

}  // namespace nnp::cuda
