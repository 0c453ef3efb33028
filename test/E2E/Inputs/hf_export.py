"""The Hugging Face side of the parity scripts without a name map of their own:
LMC tensors (plan names) go through `lmrt weights export --format hf PLAN`, so
the map, transposes, ties and the HF config all come from the model file's
`export hf` section, the one place they are stated (docs/language.md).

  ex = Exporter(plan)
  model = ex.model(init, "GPT2LMHeadModel")   # from_pretrained on the exported directory
  ex.copy_into(model, ex.export(weights))     # later weights, by HF name
  grads = ex.export(lmc_grads)                # gradients laid out as HF's
"""
import os
import subprocess
import sys
import tempfile

import torch
import transformers

import safetensors_np


class Exporter:
    """`section`: the model class of one of several `export hf` sections
    (ELECTRA's ElectraForMaskedLM and ElectraForPreTraining)."""

    def __init__(self, plan, lmrt=None, section=None):
        self.plan = plan
        self.section = section
        self.lmrt = lmrt or os.environ.get("LMRT", "lmrt")
        self.tmp = tempfile.TemporaryDirectory(prefix="hf-export-")
        self.dir = os.path.join(self.tmp.name, "hf")

    def export(self, tensors):
        """{plan name: array} -> {HF name: array}, through lmrt."""
        path = os.path.join(self.tmp.name, "lmc.safetensors")
        safetensors_np.save(path, tensors)
        section = ["--section", self.section] if self.section else []
        subprocess.run([self.lmrt, "weights", "export", "--format", "hf", self.plan, path, "--out", self.dir,
                        "--overwrite"] + section, check=True, stdout=subprocess.DEVNULL)
        return safetensors_np.load(os.path.join(self.dir, "model.safetensors"))

    def model(self, tensors, cls_name):
        """The HF model from_pretrained builds from the export of `tensors`; every
        tensor of the file is used and every parameter comes from the file."""
        self.export(tensors)
        cls = getattr(transformers, cls_name)
        model, info = cls.from_pretrained(self.dir, attn_implementation="eager", output_loading_info=True)
        problems = {k: v for k, v in info.items() if v}
        if problems:
            sys.exit(f"from_pretrained({cls_name}) on the export: {problems}")
        return model.float()

    @staticmethod
    def copy_into(model, hf_tensors):
        """Copies exported tensors into `model`'s parameters: the file must hold
        every parameter (tied ones once) and nothing else."""
        params = dict(model.named_parameters())  # tied parameters listed once
        if sorted(params) != sorted(hf_tensors):
            sys.exit("export vs HF parameters: HF only " + ", ".join(sorted(set(params) - set(hf_tensors))) +
                     "; export only " + ", ".join(sorted(set(hf_tensors) - set(params))))
        with torch.no_grad():
            for name, value in hf_tensors.items():
                params[name].copy_(torch.from_numpy(value))
