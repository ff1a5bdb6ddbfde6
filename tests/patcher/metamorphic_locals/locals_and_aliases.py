# An input for patcher.metamorphic.twins (not a fixture: no goldens): a fork whose fixes reach through locals. At
# decode the cast's dtype is a local that only the cast reads (`dtype = q.dtype`, removed with the cast) and run() is
# called through a local alias; the decode updater plans its KV dtype through a local that only plan() reads
# (`kv_dtype = self.data_type`, which the fix rewrites), and the prefill updater calls plan() through an alias.
# The "a local bound with a twin" rewrite binds each such value to a second, unread local as well
# (`dtype = twin = q.dtype`): kvpatch must find the same, and its fixes must leave the twin its value.
import torch  # noqa: F401 (read by the FP8 scales the fixes add to run())
from flashinfer import BatchMLAPagedAttentionWrapper


class DecodeMetadata:
    decode_wrapper: BatchMLAPagedAttentionWrapper


class PrefillMetadata:
    prefill_wrapper: BatchMLAPagedAttentionWrapper


class FlashInferMLAAttnBackend:
    def forward_decode(self, q, layer, forward_batch):
        decode_wrapper = self.forward_metadata.decode_wrapper
        dtype = q.dtype
        k_buffer = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(dtype)
        run = decode_wrapper.run
        o = run(q[:, :, :512], q[:, :, 512:], k_buffer[:, :, :512], k_buffer[:, :, 512:])
        return o.view(-1, layer.tp_q_head_num * layer.v_head_dim)

    def forward_extend(self, q, layer, forward_batch):
        prefill_wrapper = self.forward_metadata.prefill_wrapper
        k_buffer = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)
        o = prefill_wrapper.run(q[:, :, :512], q[:, :, 512:], k_buffer[:, :, :512], k_buffer[:, :, 512:])
        return o.view(-1, layer.tp_q_head_num * layer.v_head_dim)


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo_indptr, kv_indptr, kv_indices, kv_lens):
        kv_dtype = self.data_type
        wrapper.plan(qo_indptr, kv_indptr, kv_indices, kv_lens, 16, 512, 64, 1, False, 0.1, self.data_type, kv_dtype)


class FlashInferMLAIndicesUpdaterPrefill:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo_indptr, kv_indptr, kv_indices, kv_lens):
        plan = wrapper.plan
        plan(qo_indptr, kv_indptr, kv_indices, kv_lens, 16, 512, 64, 1, True, 0.1, self.data_type, self.data_type)
