"""Checks the span_corruption transform's rows (`lmrt run --dump-dir`) against
a Python port of Hugging Face's run_t5_mlm_flax.py (compute_input_and_target_lengths,
random_spans_noise_mask's counts, create_sentinel_ids, filter_input_ids,
shift_tokens_right), and the statistics of its random draws.

The draws themselves are LMC's (counter-based, keyed by seed and sample; HF
shuffles with NumPy's global generator), so the test is in two parts:
  * exact, on the same draws: each row's raw text and noise mask are recovered
    from its ids and labels (kept tokens from the inputs, noise tokens from the
    targets, the sentinels saying where each span goes); the port of HF's
    functions applied to that raw text and mask must give back the dumped ids,
    labels and decoder_ids exactly, and the mask must have HF's counts: round(R x density) noise
    tokens in round(noise / mean span) spans, alternating from a kept run;
  * statistics over all rows: the share of noise is the density, the mean
    noise span length is its share of the spans, and each cut of HF's
    _random_segmentation is uniform: the mean length of the first noise span
    is noise / spans like the others' (within 4 standard errors).

Usage: check_span_corruption.py --dump DIR --vocab V --seq Ti
"""
import argparse
import glob
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

DENSITY, MEAN_SPAN, PAD, EOS = 0.15, 3.0, 0, 1


def compute_input_and_target_lengths(inputs_length, noise_density, mean_noise_span_length):
    """HF's, verbatim."""
    def _tokens_length_to_inputs_length_targets_length(tokens_length):
        num_noise_tokens = int(round(tokens_length * noise_density))
        num_nonnoise_tokens = tokens_length - num_noise_tokens
        num_noise_spans = int(round(num_noise_tokens / mean_noise_span_length))
        _input_length = num_nonnoise_tokens + num_noise_spans + 1
        _output_length = num_noise_tokens + num_noise_spans + 1
        return _input_length, _output_length

    tokens_length = inputs_length
    while _tokens_length_to_inputs_length_targets_length(tokens_length + 1)[0] <= inputs_length:
        tokens_length += 1
    inputs_length, targets_length = _tokens_length_to_inputs_length_targets_length(tokens_length)
    if noise_density == 0.5 and targets_length > inputs_length:
        tokens_length -= 1
        targets_length -= 1
    return tokens_length, targets_length


def noise_counts(length):
    """random_spans_noise_mask's counts, verbatim."""
    num_noise_tokens = int(np.round(length * DENSITY))
    num_nonnoise_tokens = length - num_noise_tokens
    num_noise_tokens = min(max(num_noise_tokens, 1), length - 1)
    num_noise_spans = int(np.round(min(num_noise_tokens, num_nonnoise_tokens) / MEAN_SPAN))
    return num_noise_tokens, max(num_noise_spans, 1)


def create_sentinel_ids(mask_indices, vocab):
    """HF's, with len(self.tokenizer) = vocab."""
    start_indices = mask_indices - np.roll(mask_indices, 1, axis=-1) * mask_indices
    start_indices[:, 0] = mask_indices[:, 0]
    sentinel_ids = np.where(start_indices != 0, np.cumsum(start_indices, axis=-1), start_indices)
    sentinel_ids = np.where(sentinel_ids != 0, (vocab - sentinel_ids), 0)
    sentinel_ids -= mask_indices - start_indices
    return sentinel_ids


def filter_input_ids(input_ids, sentinel_ids):
    batch_size = input_ids.shape[0]
    input_ids_full = np.where(sentinel_ids != 0, sentinel_ids, input_ids)
    input_ids = input_ids_full[input_ids_full >= 0].reshape((batch_size, -1))
    return np.concatenate([input_ids, np.full((batch_size, 1), EOS, dtype=np.int32)], axis=-1)


def shift_tokens_right(input_ids, pad_token_id, decoder_start_token_id):
    shifted_input_ids = np.zeros_like(input_ids)
    shifted_input_ids[:, 1:] = input_ids[:, :-1]
    shifted_input_ids[:, 0] = decoder_start_token_id
    return np.where(shifted_input_ids == -100, pad_token_id, shifted_input_ids)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--dump", required=True)
    ap.add_argument("--vocab", type=int, required=True)
    ap.add_argument("--seq", type=int, required=True)
    a = ap.parse_args()
    raw_len, target_len = compute_input_and_target_lengths(a.seq, DENSITY, MEAN_SPAN)
    noise, spans = noise_counts(raw_len)
    print(f"lengths: inputs {a.seq}, raw {raw_len}, targets {target_len}; {noise} noise tokens in {spans} spans")
    failures, rows, span_lengths, first_lengths, noise_share = 0, 0, [], [], []
    for path in sorted(glob.glob(os.path.join(a.dump, "step*.safetensors"))):
        d = safetensors_np.load(path)
        ids, labels, dec, am = d["ids"], d["labels"], d["decoder_ids"], d["attention_mask"]
        if ids.shape[1] != a.seq or labels.shape[1] != target_len or dec.shape != labels.shape:
            print(f"{os.path.basename(path)}: shapes ids {ids.shape} labels {labels.shape} decoder {dec.shape} FAIL")
            failures += 1
            continue
        for r in range(ids.shape[0]):
            rows += 1
            # The inputs' j-th sentinel stands for noise span j; the targets hold
            # s_0 span_0 s_1 span_1 ... (create_sentinel_ids on the kept runs,
            # the first of which starts the row), so span j follows their j-th.
            tgt = labels[r, :-1]
            noise_spans, cur = [], None
            for t in tgt:
                if t >= 256:
                    cur = []
                    noise_spans.append(cur)
                else:
                    cur.append(int(t))
            raw, mask, j = [], [], 0
            for t in ids[r, :-1]:
                if t >= 256:
                    raw += noise_spans[j]
                    mask += [1] * len(noise_spans[j])
                    j += 1
                else:
                    raw.append(int(t))
                    mask.append(0)
            raw, mask = np.array(raw, np.int32)[None], np.array(mask, np.int8)[None]
            ok = raw.shape[1] == raw_len and int(mask.sum()) == noise and j == spans == len(noise_spans)
            ok = ok and mask[0, 0] == 0 and all(len(s) > 0 for s in noise_spans)
            if ok:
                port_ids = filter_input_ids(raw, create_sentinel_ids(mask, a.vocab))
                port_labels = filter_input_ids(raw, create_sentinel_ids((1 - mask).astype(np.int8), a.vocab))
                port_dec = shift_tokens_right(port_labels, PAD, PAD)
                ok = (np.array_equal(port_ids[0], ids[r]) and np.array_equal(port_labels[0], labels[r])
                      and np.array_equal(port_dec[0], dec[r]) and bool((am[r] == 1).all()))
            if not ok:
                failures += 1
                print(f"{os.path.basename(path)} row {r}: differs from HF's functions FAIL")
                continue
            span_lengths += [len(s) for s in noise_spans]
            first_lengths.append(len(noise_spans[0]))
            noise_share.append(mask.mean())
    print(f"{rows} rows: ids, labels and decoder_ids as HF's functions make them from the same raw text and mask "
          f"{'ok' if failures == 0 else 'FAIL'}")
    mean = float(np.mean(span_lengths))
    expect = noise / spans
    se = float(np.std(first_lengths)) / np.sqrt(len(first_lengths)) + 1e-12
    stats_ok = abs(float(np.mean(noise_share)) - noise / raw_len) < 1e-12 and abs(mean - expect) < 1e-9
    first_ok = abs(float(np.mean(first_lengths)) - expect) < 4 * se
    print(f"noise share {np.mean(noise_share):.4f} (density {DENSITY}), mean noise span {mean:.3f} "
          f"(mean_noise_span_length {MEAN_SPAN}) {'ok' if stats_ok else 'FAIL'}")
    print(f"first span mean {np.mean(first_lengths):.3f} vs {expect:.3f} (4 s.e. {4 * se:.3f}) "
          f"{'ok' if first_ok else 'FAIL'}")
    sys.exit(0 if failures == 0 and stats_ok and first_ok else 1)


if __name__ == "__main__":
    main()
