# An input for patcher.metamorphic.shared_dtype_local (not a fixture: no goldens): a fork that casts the latent and
# rope parts of the KV cache one statement after the other. At decode both casts feed run() alone, so both go; at
# extend the latent part's cast goes, and a second cast of the cache, for a debug hook, stays. The "one dtype local
# for a block's casts" rewrite gives each pair one `dtype = q.dtype` local: it must go with the decode pair and stay
# for the extend pair, and nothing else kvpatch finds may change.
import torch
from flashinfer import BatchMLAPagedAttentionWrapper


class DecodeMetadata:
    decode_wrapper: BatchMLAPagedAttentionWrapper


class PrefillMetadata:
    prefill_wrapper: BatchMLAPagedAttentionWrapper


class FlashInferMLAAttnBackend:
    def forward_decode(self, q, layer, forward_batch):
        decode_wrapper = self.forward_metadata.decode_wrapper
        k_buffer = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)
        ckv = k_buffer[:, :, : layer.v_head_dim].to(q.dtype)
        kpe = k_buffer[:, :, layer.v_head_dim :].to(q.dtype)
        q_nope, q_rope = q[:, :, : layer.v_head_dim], q[:, :, layer.v_head_dim :]
        o = decode_wrapper.run(q_nope, q_rope, ckv, kpe)
        return o.view(-1, layer.tp_q_head_num * layer.v_head_dim)

    def forward_extend(self, q, layer, forward_batch):
        prefill_wrapper = self.forward_metadata.prefill_wrapper
        k_buffer = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id)
        ckv = k_buffer[:, :, : layer.v_head_dim].to(q.dtype)
        self.debug_hook(k_buffer.to(q.dtype))
        o = prefill_wrapper.run(q[:, :, : layer.v_head_dim], q[:, :, layer.v_head_dim :], ckv, k_buffer[:, :, 512:])
        return o.view(-1, layer.tp_q_head_num * layer.v_head_dim)

    def debug_hook(self, tensor):
        torch.cuda.synchronize()
        print(tensor.float().abs().max())


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo_indptr, kv_indptr, kv_indices, kv_lens):
        wrapper.plan(
            qo_indptr, kv_indptr, kv_indices, kv_lens, 16, 512, 64, 1, False, 0.1, self.data_type, self.data_type
        )


class FlashInferMLAIndicesUpdaterPrefill:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo_indptr, kv_indptr, kv_indices, kv_lens):
        wrapper.plan(
            qo_indptr, kv_indptr, kv_indices, kv_lens, 16, 512, 64, 1, True, 0.1, self.data_type, self.data_type
        )
