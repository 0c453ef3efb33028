"""Edits a safetensors file for the error tests (numpy only):
  st_edit.py FILE --drop NAME          remove a tensor
  st_edit.py FILE --copy NAME NEW      add NEW, a copy of NAME
  st_edit.py FILE --transpose NAME     store NAME transposed (a wrong shape)
The file is rewritten in place (without __metadata__)."""
import argparse
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import safetensors_np  # noqa: E402

ap = argparse.ArgumentParser()
ap.add_argument("file")
ap.add_argument("--drop")
ap.add_argument("--copy", nargs=2)
ap.add_argument("--transpose")
a = ap.parse_args()
t = safetensors_np.load(a.file)
if a.drop:
    del t[a.drop]
if a.copy:
    t[a.copy[1]] = t[a.copy[0]]
if a.transpose:
    t[a.transpose] = t[a.transpose].T.copy()
safetensors_np.save(a.file, t)
