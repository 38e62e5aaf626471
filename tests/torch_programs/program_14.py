import math

import torch
import torch.nn as nn

torch.manual_seed(0)


# a custom Module with explicit parameters and buffer, training loop with closure-based metrics
class LinReg(nn.Module):
    def __init__(self):
        super().__init__()
        self.w = nn.Parameter(torch.zeros(3))
        self.b = nn.Parameter(torch.tensor(0.0))
        self.register_buffer("steps", torch.tensor(0))

    def forward(self, x):
        self.steps += 1
        return x @ self.w + self.b


X = torch.randn(100, 3)
true_w = torch.tensor([1.0, -2.0, 0.5])
y = X @ true_w + 0.3
m = LinReg()
opt = torch.optim.SGD(m.parameters(), lr=0.1)
for _ in range(200):
    loss = ((m(X) - y) ** 2).mean()
    opt.zero_grad()
    loss.backward()
    opt.step()
print([round(v, 2) for v in m.w.tolist()], round(m.b.item(), 2), m.steps.item())
print(m.state_dict().keys())
print({k: v.shape for k, v in m.named_parameters()})
x = torch.linspace(-math.pi, math.pi, 50)
a, b, c, d = (torch.randn((), requires_grad=True) for _ in range(4))
for t in range(300):
    y_pred = a + b * x + c * x**2 + d * x**3
    loss = (y_pred - torch.sin(x)).pow(2).sum()
    loss.backward()
    with torch.no_grad():
        for p in (a, b, c, d):
            p -= 1e-4 * p.grad
            p.grad = None
print(round(loss.item(), 1))
print(
    torch.tensor(3.5).round().item(),
    torch.tensor([2.5, 3.5]).round().tolist(),
    torch.tensor([1.234]).round(decimals=2).tolist(),
)
print(
    torch.arange(10).reshape(2, 5)[:, 1::2].tolist(),
    torch.arange(5)[-2:].tolist(),
    torch.arange(1, 10, 3).tolist(),
)
print(
    torch.full_like(torch.ones(2), 7, dtype=torch.int32).tolist(),
    torch.zeros(2, 2).fill_diagonal_(3).tolist(),
)
print(
    torch.einsum("ii->", torch.eye(3)).item(),
    torch.einsum("bi,bj->bij", torch.ones(2, 2), torch.ones(2, 3)).shape,
)
print(
    torch.tensor([[1, 2], [3, 4]]).sum(dim=0, dtype=torch.float32).dtype,
    torch.prod(torch.tensor([1, 2, 3])).item(),
)
print(
    torch.cumprod(torch.tensor([1.0, 2.0, 3.0]), 0).tolist(),
    torch.diff(torch.tensor([1, 4, 9])).tolist(),
)
print(
    torch.argsort(torch.tensor([3, 1, 2]), descending=True).tolist(),
    torch.kthvalue(torch.tensor([3.0, 1.0, 2.0]), 2).values.item(),
)
print(torch.histc(torch.tensor([1.0, 2.0, 1.0]), bins=4, min=0, max=3).tolist())
print(
    torch.std_mean(torch.tensor([1.0, 2.0, 3.0])),
    torch.var(torch.tensor([1.0, 2.0, 3.0]), unbiased=True).item(),
)
