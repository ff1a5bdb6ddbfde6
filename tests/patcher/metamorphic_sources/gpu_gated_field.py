# An input for patcher.metamorphic.flow_fields (not a fixture: no goldens): a fork whose decode updater chooses its KV
# dtype field on the GPU (`kv if sm90 else model`), so its plan sites are gated and the casts feeding run() stay for
# every cache; its second plan site passes the model dtype and gets the field that holds the gate. The prefill
# updater holds upstream's gate on the cache's own dtype, so its cast stays only for the other caches, guarded. The
# "attribute conditional as a default and an override in __init__" rewrite spells each field as statements; the
# outcome must not change.
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
        if k_buffer.dtype != q.dtype:
            k_buffer = k_buffer.to(q.dtype)
        return decode_wrapper.run(q, q, k_buffer[:, :, :512], k_buffer[:, :, 512:], ckv_scale=1.0, kpe_scale=1.0)

    def forward_extend(self, q, layer, forward_batch):
        prefill_wrapper_paged = self.forward_metadata.prefill_wrapper
        k_buf = forward_batch.token_to_kv_pool.get_key_buffer(layer.layer_id).to(q.dtype)
        return prefill_wrapper_paged.run(q, q, k_buf[:, :, :512], k_buf[:, :, 512:], ckv_scale=1.0, kpe_scale=1.0)


class FlashInferMLAIndicesUpdaterDecode:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype
        self.kv_data_type = (
            model_runner.kv_cache_dtype if torch.cuda.get_device_capability()[0] == 9 else model_runner.dtype
        )

    def call_begin_forward(self, wrapper: BatchMLAPagedAttentionWrapper, qo, kv, idx, lens, sm_scale):
        wrapper.plan(qo, kv, idx, lens, 16, 512, 64, 1, False, sm_scale, self.data_type, self.kv_data_type)

    def call_begin_forward_for_replay(self, wrapper: BatchMLAPagedAttentionWrapper, qo, kv, idx, lens, sm_scale):
        wrapper.plan(qo, kv, idx, lens, 16, 512, 64, 1, False, sm_scale, self.data_type, self.data_type)


class FlashInferMLAIndicesUpdaterPrefill:
    def __init__(self, model_runner):
        self.data_type = model_runner.dtype
        self.kv_data_type = (
            model_runner.kv_cache_dtype if model_runner.kv_cache_dtype == torch.float8_e4m3fn else model_runner.dtype
        )

    def call_begin_forward(self, wrapper_paged: BatchMLAPagedAttentionWrapper, qo, kv, idx, lens, sm_scale):
        wrapper_paged.plan(qo, kv, idx, lens, 16, 512, 64, 1, True, sm_scale, self.data_type, self.kv_data_type)
