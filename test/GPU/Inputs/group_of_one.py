#!/usr/bin/env python3
"""Puts collectives over a group of one rank into a model's objective, for the 1-rank NCCL run
(docs/gpu-check.md, docs/distributed.md "NCCL"): reads the frontend module `lmc compile
--dump-dir` writes (00-frontend.mlir) and writes it back with every parameter of the objective
passed through a collective of mesh axis 0 (data) and group size 1 before its first use:
  - a matrix (rank >= 2) through lm.all_gather along dimension 0: autodiff then
    reduce-scatters its gradient (the VJP of a gather);
  - a vector through lm.all_reduce with mean: its gradient is all-reduced (mean), as the
    data-parallel pass does with every gradient;
and the loss through lm.all_reduce with mean. With one rank each collective is the identity, so
the plan trains to the same losses as the plain one; with LMRT_NCCL_GROUPS_OF_ONE=1, lmrt's CUDA
backend sends them through NCCL instead of copying (no pass emits collectives for a mesh of one,
which is what a GPU machine with one GPU has).
With --tensor-axis the matrices are gathered over mesh axis 1 (the tensor axis: their gradients
reduce-scattered over it) and the loss all-reduced over it, the vectors staying on axis 0, and
lm.axis_index of the tensor axis (0 in a group of one) is added to the loss: lmrt's CUDA backend
then joins one NCCL communicator per mesh axis, as a tensor-parallel run on a data x tensor mesh
does (runtime/cuda/collective.cpp), and the run tests that on one GPU.
Usage: group_of_one.py [--tensor-axis] IN.mlir OUT.mlir"""
import re
import sys


def main():
    args = sys.argv[1:]
    tensor_axis = "--tensor-axis" in args
    src, dst = [a for a in args if a != "--tensor-axis"][:2]
    matrix_axis = 1 if tensor_axis else 0
    lines = open(src).read().split("\n")
    # The objective: the func.func whose attributes say lm.objective.
    head = next((i for i, l in enumerate(lines) if l.lstrip().startswith("func.func @") and "lm.objective" in l), None)
    if head is None:
        sys.exit(f"group_of_one: {src} has no func.func with lm.objective")
    sig = lines[head]
    # Arguments: '%argN: tensor<...> {attrs}'; a parameter's attributes hold lm.param.
    starts = [m for m in re.finditer(r"%(arg\d+): (tensor<[^>]*>)", sig)]
    params = []
    for k, m in enumerate(starts):
        end = starts[k + 1].start() if k + 1 < len(starts) else len(sig)
        if "lm.param" in sig[m.end():end] and m.group(2).endswith("xf32>"):
            params.append((m.group(1), m.group(2)))
    if not params:
        sys.exit(f"group_of_one: the objective of {src} has no f32 parameters")
    end = next(i for i in range(head + 1, len(lines)) if lines[i].strip() == "}")
    ret = end - 1
    m = re.match(r"(\s*)return (%\w+) : (tensor<f32>)$", lines[ret])
    if not m:
        sys.exit(f"group_of_one: the objective of {src} does not end in 'return %x : tensor<f32>'")
    indent = m.group(1)
    body = "\n".join(lines[head + 1:ret])
    inserted = []
    for name, type_ in params:
        new = f"%nccl_{name}"
        body = re.sub(rf"%{name}\b", new, body)
        rank = type_.count("x")  # tensor<256x128xf32>: 2
        if rank >= 2:
            inserted.append(f"{indent}{new} = lm.all_gather %{name} {{dim = 0 : i64, group_size = 1 : i64, "
                            f"mesh_axis = {matrix_axis} : i64}} : ({type_}) -> {type_}")
        else:
            inserted.append(f"{indent}{new} = lm.all_reduce %{name} {{group_size = 1 : i64, mean = true, "
                            f"mesh_axis = 0 : i64}} : ({type_}) -> {type_}")
    loss = m.group(2)
    tail = [f"{indent}%nccl_loss = lm.all_reduce {loss} {{group_size = 1 : i64, mean = true, "
            f"mesh_axis = {matrix_axis} : i64}} : (tensor<f32>) -> tensor<f32>"]
    if tensor_axis:
        tail += [f"{indent}%nccl_index = lm.axis_index {{group_size = 1 : i64, mesh_axis = 1 : i64}} : tensor<f32>",
                 f"{indent}%nccl_loss_at = lm.add %nccl_loss, %nccl_index : (tensor<f32>, tensor<f32>) -> tensor<f32>",
                 f"{indent}return %nccl_loss_at : tensor<f32>"]
    else:
        tail += [f"{indent}return %nccl_loss : tensor<f32>"]
    out = lines[:head + 1] + inserted + body.split("\n") + tail + lines[end:]
    open(dst, "w").write("\n".join(out))
    axes = " (matrices and the loss on the tensor axis)" if tensor_axis else ""
    print(f"group_of_one: {len(params)} parameters of the objective through collectives of one rank, and the loss{axes}")


if __name__ == "__main__":
    main()
