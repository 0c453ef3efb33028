"""A PyTorch ELMo biLM written after AllenNLP's _ElmoCharacterEncoder, Highway,
LstmCellWithProjection, ElmoLstm and ScalarMix (allennlp/modules/elmo.py,
highway.py, lstm_cell_with_projection.py, elmo_lstm.py, scalar_mix.py; AllenNLP
itself no longer installs with current PyTorch), compared with `lmrt run
--dump-dir` of models/elmo.lm on the same weights and batches.

The initial highway and LSTM biases are checked against AllenNLP's constructors
(gate and forget-gate biases 1). For each dumped step: the loss (relative 1e-5), every parameter's gradient
(relative 1e-4 of its norm), and through `lmrt forward --inputs` the biLM's three
layers (`forward:elmo_bilm`) and their scalar mix (`forward:elmo`), relative 1e-4. The reference runs in float64 on LMC's float32 weights.

The characters of a token are ELMoCharacterMapper's: the token's bytes between
beginning-of-word 258 and end-of-word 259, padded with 260 to --chars, each + 1
(id 0 is a padded token's). With byte data token v is the byte v.

Usage: elmo_reference.py --dump DIR --plan PLAN --chars C [--clip 3]
"""
import os
import sys

import numpy as np
import torch
import torch.nn.functional as F

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from parity_common import Checks, compare_logits, lmrt_forward, load, parity_args, rel, step_weights, steps  # noqa: E402

BOW, EOW, PAD = 258, 259, 260


def character_ids(tokens, chars):
    """ELMoCharacterMapper on byte tokens: [B, T] -> [B, T, chars]."""
    out = np.full(tokens.shape + (chars,), PAD + 1, np.int64)
    out[..., 0] = BOW + 1
    out[..., 1] = tokens + 1
    out[..., 2] = EOW + 1
    return torch.from_numpy(out)


class CharacterEncoder:
    """_ElmoCharacterEncoder: char embedding, one Conv1d a width (max over time,
    then ReLU), Highway, projection. Weights are LMC's (stored [in, out]); the
    torch layouts are views of them."""

    def __init__(self, p, prefix):
        self.p, self.prefix = p, prefix
        self.widths = sorted(int(n[len(prefix) + 10:].split(".")[0])
                             for n in p if n.startswith(prefix + "char_conv_") and n.endswith(".weight"))
        self.highways = sorted({n.split(".")[1] for n in p if n.startswith(prefix + "highway_")})

    def __call__(self, char_ids):
        p, pre = self.p, self.prefix
        b, t, c = char_ids.shape
        # (batch * tokens, char_dim, chars): Conv1d is channels-first.
        x = F.embedding(char_ids.view(b * t, c), p[pre + "char_embed"]).transpose(1, 2)
        convs = []
        for i in self.widths:
            w = p[f"{pre}char_conv_{i}.weight"].permute(2, 1, 0)      # [out, in, width]
            y = F.conv1d(x, w, p[f"{pre}char_conv_{i}.bias"])
            y, _ = torch.max(y, dim=-1)
            convs.append(F.relu(y))
        h = torch.cat(convs, dim=-1)
        for name in self.highways:                                     # Highway.forward
            projected = F.linear(h, p[f"{pre}{name}.weight"].t(), p[f"{pre}{name}.bias"])
            nonlinear, gate = projected.chunk(2, dim=-1)
            gate = torch.sigmoid(gate)
            h = gate * h + (1 - gate) * F.relu(nonlinear)
        h = F.linear(h, p[pre + "proj_weight"].t(), p[pre + "proj_bias"])
        return h.view(b, t, -1)


class LstmCellWithProjection:
    """One direction of one layer, AllenNLP's loop over time on full-length rows."""

    def __init__(self, p, prefix, go_forward, cell_clip, proj_clip):
        self.w_in = p[prefix + "input_linearity"].t()          # Linear(in, 4 cell, bias=False)
        self.w_state = p[prefix + "state_linearity"].t()       # Linear(hidden, 4 cell)
        self.b_state = p[prefix + "bias"]
        self.w_proj = p[prefix + "state_projection"].t()       # Linear(cell, hidden, bias=False)
        self.cell = self.w_proj.shape[1]
        self.hidden = self.w_proj.shape[0]
        self.go_forward, self.cell_clip, self.proj_clip = go_forward, cell_clip, proj_clip

    def __call__(self, inputs):
        batch, total, _ = inputs.shape
        c = self.cell
        outputs = [None] * total
        memory = inputs.new_zeros(batch, c)
        state = inputs.new_zeros(batch, self.hidden)
        for timestep in range(total):
            index = timestep if self.go_forward else total - timestep - 1
            projected_input = F.linear(inputs[:, index], self.w_in)
            projected_state = F.linear(state, self.w_state, self.b_state)
            g = projected_input + projected_state
            input_gate = torch.sigmoid(g[:, 0 * c:1 * c])
            forget_gate = torch.sigmoid(g[:, 1 * c:2 * c])
            memory_init = torch.tanh(g[:, 2 * c:3 * c])
            output_gate = torch.sigmoid(g[:, 3 * c:4 * c])
            memory = input_gate * memory_init + forget_gate * memory
            if self.cell_clip:
                memory = torch.clamp(memory, -self.cell_clip, self.cell_clip)
            state = F.linear(output_gate * torch.tanh(memory), self.w_proj)
            if self.proj_clip:
                state = torch.clamp(state, -self.proj_clip, self.proj_clip)
            outputs[index] = state
        return torch.stack(outputs, dim=1)


def elmo_lstm(p, x, layers, clip):
    """ElmoLstm: a forward and a backward stack, a residual connection from the
    second layer on; the per-layer outputs (forward, backward)."""
    fwd, bwd, out = x, x, []
    for i in range(layers):
        f_cache, b_cache = fwd, bwd
        fwd = LstmCellWithProjection(p, f"forward.layer_{i}.", True, clip, clip)(fwd)
        bwd = LstmCellWithProjection(p, f"backward.layer_{i}.", False, clip, clip)(bwd)
        if i != 0:
            fwd, bwd = fwd + f_cache, bwd + b_cache
        out.append((fwd, bwd))
    return out


def bilm(p, tokens, chars, clip):
    """_ElmoBiLm's three layers (the token layer doubled, then each LSTM layer's
    [forward, backward]) and their ScalarMix."""
    x = CharacterEncoder(p, "char_encoder.")(character_ids(tokens, chars))
    layers = [torch.cat([x, x], dim=-1)] + [torch.cat(fb, dim=-1) for fb in elmo_lstm(p, x, 2, clip)]
    # ScalarMix: gamma * sum_k softmax(s)_k layer_k.
    w = torch.softmax(p["mix_scalars"], dim=0)
    mix = p["mix_gamma"] * sum(w[k] * h for k, h in enumerate(layers))
    return layers, mix


def allennlp_biases(init):
    """The biases AllenNLP's constructors set, by LMC name, beside LMC's initial
    values: Highway fills the gate half of each layer's bias (its second half)
    with 1, so that the layer starts by carrying its input (gate * x); and
    LstmCellWithProjection.reset_parameters zeroes state_linearity's bias (the
    cell's only one: input_linearity has none) and fills its forget-gate block
    (the second of input, forget, memory, output) with 1 (Jozefowicz et al.
    2015). Highway's other half keeps torch.nn.Linear's random default, which
    is not compared."""
    pairs = []
    for n, v in init.items():
        if ".highway_" in n and n.endswith(".bias"):
            half = v.shape[-1] // 2
            pairs.append((n, v[half:], np.ones(half)))
        elif n.endswith(".bias") and ".layer_" in n:
            cell = v.shape[-1] // 4
            want = np.zeros(4 * cell)
            want[cell:2 * cell] = 1.0
            pairs.append((n, v, want))
    return pairs


def main():
    ap = parity_args()
    ap.add_argument("--chars", type=int, required=True)
    ap.add_argument("--clip", type=float, default=3.0)
    a = ap.parse_args()
    print(f"torch {torch.__version__}")
    init = load(os.path.join(a.dump, "init.safetensors"))
    print(f"{len(init)} parameters, {sum(v.size for v in init.values()):,} numbers")
    checks = Checks()
    pairs = allennlp_biases(init)
    highways = sum(".highway_" in n for n, _, _ in pairs)
    checks.check(highways > 0 and len(pairs) > highways and all(np.array_equal(v, w) for _, v, w in pairs),
                 f"init: {highways} highway gate biases and {len(pairs) - highways} LSTM biases as AllenNLP's")
    weights = init
    for k, dump in steps(a.dump):
        p = {n: torch.tensor(v, dtype=torch.float64, requires_grad=True) for n, v in weights.items()}
        window = dump["tokens"].astype(np.int64)
        seq = window.shape[1] - 1
        tokens = window[:, 1:seq]
        layers, mix = bilm(p, tokens, a.chars, a.clip)
        # One softmax for the top layer's forward half (next token) and backward half (previous).
        hidden = layers[-1].shape[-1] // 2
        softmax = lambda h: F.linear(h, p["softmax_weight"].t(), p["softmax_bias"])  # noqa: E731
        fl, bl = softmax(layers[-1][..., :hidden]), softmax(layers[-1][..., hidden:])
        vocab = fl.shape[-1]
        loss = 0.5 * (F.cross_entropy(fl.reshape(-1, vocab), torch.from_numpy(window[:, 2:]).reshape(-1)) +
                      F.cross_entropy(bl.reshape(-1, vocab), torch.from_numpy(window[:, :seq - 1]).reshape(-1)))
        loss.backward()
        e = rel(float(dump["loss"]), loss.item())
        checks.check(e <= a.loss_rtol, f"step {k}: loss lmc {float(dump['loss']):.8f} torch {loss.item():.8f} rel {e:.2e}")
        grads = {n: (t.grad.numpy() if t.grad is not None else np.zeros(t.shape)) for n, t in p.items()}
        worst = max((rel(dump["grad." + n], g), n) for n, g in grads.items())
        checks.check(worst[0] <= a.grad_rtol,
                     f"step {k}: {len(grads)} gradients, max rel err {worst[0]:.2e} ({worst[1]})")
        inputs = {"tokens": dump["tokens"][:, 1:seq].copy()}
        lmc = lmrt_forward(a.plan, weights, inputs, model="elmo_bilm")
        ref = {f"layer_{i}": h.detach().numpy() for i, h in enumerate(layers)}
        compare_logits(checks, k, lmc, ref, a.logits_rtol)
        # forward:elmo's one output is named `logits` (docs/language.md, `model`).
        compare_logits(checks, k, lmrt_forward(a.plan, weights, inputs, model="elmo"),
                       {"logits": mix.detach().numpy()}, a.logits_rtol)
        weights = step_weights(init, dump)
    checks.finish()


if __name__ == "__main__":
    main()
