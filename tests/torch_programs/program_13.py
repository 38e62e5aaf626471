import torch
import torch.nn as nn

torch.manual_seed(0)
m = nn.Sequential(
    nn.Conv1d(4, 8, 3, padding=1),
    nn.GroupNorm(2, 8),
    nn.Mish(),
    nn.AdaptiveMaxPool1d(1),
    nn.Flatten(),
    nn.Linear(8, 2),
)
x = torch.randn(5, 4, 16)
print(m(x).shape)
opt = torch.optim.SGD(m.parameters(), lr=0.1)
sched = torch.optim.lr_scheduler.ReduceLROnPlateau(opt, mode="min", factor=0.5, patience=0)
for i in range(3):
    loss = m(x).pow(2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
    sched.step(1.0)
print(opt.param_groups[0]["lr"])
sch2 = torch.optim.lr_scheduler.CosineAnnealingLR(
    torch.optim.Adam([torch.zeros(1, requires_grad=True)], lr=1.0), T_max=10
)
for _ in range(5):
    sch2.optimizer.step()
    sch2.step()
print(round(sch2.get_last_lr()[0], 4))
print(m.training, m.eval().training, m.train().training)
print(len(list(m.modules())), [type(c).__name__ for c in m.children()][:3])
m.zero_grad()
print(all(p.grad is None for p in m.parameters()))
print(m[0].weight.grad, m.to(torch.float64)[0].weight.dtype, m.float()[0].weight.dtype)
print(torch.nn.functional.pad(torch.ones(1, 2, 3), (1, 1), value=5.0)[0, 0].tolist())
h = torch.zeros(2, 3).index_add_(0, torch.tensor([0, 0]), torch.ones(2, 3))
print(h.tolist())
print(
    torch.bucketize(torch.tensor([0.1, 0.5, 0.9]), torch.tensor([0.3, 0.6])).tolist(),
    torch.searchsorted(torch.tensor([1, 3, 5]), torch.tensor([2, 6])).tolist(),
)
print(torch.nn.utils.clip_grad_value_(m.parameters(), 0.1))
print(torch.tensor([[1.0, 2.0], [3.0, 4.0]]).inverse().tolist(), torch.det(torch.eye(2)).item())
print(torch.logsumexp(torch.zeros(3), 0).item(), torch.erf(torch.tensor(0.5)).item())
model = torch.compile(m) if hasattr(torch, "compile") else m
print(model(x).shape)
print(
    torch.where(torch.tensor([True, False]))[0].tolist(),
    torch.nonzero(torch.tensor([0, 1, 1])).squeeze(1).tolist(),
)
print(torch.cat([torch.zeros(0, 2), torch.ones(1, 2)]).shape, torch.tensor([]).shape)
print(
    torch.norm(torch.ones(3)).item(),
    torch.ones(2, 3).norm(dim=1).tolist(),
    torch.ones(4).view(2, 2).mm(torch.ones(2, 1)).T.tolist(),
)
print(torch.manual_seed(1) is not None, torch.initial_seed(), torch.seed() > 0)
print(
    torch.ones(3).to("cpu", torch.float16).dtype,
    torch.ones(3).type(torch.int32).dtype,
    torch.ones(3).type(),
)
print(
    isinstance(torch.ones(1), torch.Tensor),
    torch.is_tensor(torch.ones(1)),
    torch.numel(torch.ones(2, 3)),
)
