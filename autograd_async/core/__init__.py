"""The floor of the library: what every layer above builds on, importing only dtypes, devices,
array backends and the ambient modes (grad mode, autocast and vmap state) below it.

- `tensor`: the Tensor and its state (data, device, version counter, view base, hooks);
- `graph`: nodes, edges, sequence numbers, `GraphRoot` and a leaf's `AccumulateGrad`;
- `history`: the one place a node is set up and a tensor's `grad_fn` written (and a stale view
  refreshed);
- `saved_hooks` and `saved`: saved tensors, packed through `saved_tensors_hooks`;
- `op`: `Op`, the base of every differentiable op (recording, saving, checks);
- `recording`: where forward ops report to a profiler;
- `arrays`: array helpers shared by backward rules and the graph's bookkeeping (`sum_to`, ...).

What lives above installs itself here rather than being imported: `autograd` installs
`Tensor.backward`, `ops.views` the regeneration of a stale view, `ops.autocast_policy`
`Op.route_autocast`, `node_evaluation` `Node.__call__`.
"""
