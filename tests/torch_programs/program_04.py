import torch
import torch.nn as nn
from torch.autograd import Function, gradcheck


class MyExp(Function):
    @staticmethod
    def forward(ctx, x):
        y = x.exp()
        ctx.save_for_backward(y)
        return y

    @staticmethod
    def backward(ctx, g):
        (y,) = ctx.saved_tensors
        return g * y


x = torch.randn(5, dtype=torch.double, requires_grad=True)
print(gradcheck(MyExp.apply, (x,), eps=1e-6, atol=1e-4))
# WGAN-GP gradient penalty
D = nn.Sequential(nn.Linear(8, 16), nn.Tanh(), nn.Linear(16, 1))
real, fake = torch.randn(4, 8), torch.randn(4, 8)
alpha = torch.rand(4, 1)
interp = (alpha * real + (1 - alpha) * fake).requires_grad_(True)
out = D(interp)
grads = torch.autograd.grad(
    outputs=out,
    inputs=interp,
    grad_outputs=torch.ones_like(out),
    create_graph=True,
    retain_graph=True,
)[0]
gp = ((grads.norm(2, dim=1) - 1) ** 2).mean()
gp.backward()
print(D[0].weight.grad.shape, float(gp) > 0)
seen = []
h = x.register_hook(lambda g: seen.append(g.clone()))
y = (x * 2).sum()
y.backward()
h.remove()
print(len(seen), torch.allclose(x.grad, torch.full_like(x, 2.0)))
acts = {}
lin = nn.Linear(3, 3)
lin.register_forward_hook(lambda mod, inp, out: acts.__setitem__("o", out.detach()))
lin.register_full_backward_hook(lambda mod, gi, go: acts.__setitem__("go", go[0].shape))
lin(torch.randn(2, 3, requires_grad=True)).sum().backward()
print(acts["o"].shape, acts["go"])
with torch.autograd.set_detect_anomaly(True):
    a = torch.randn(3, requires_grad=True)
    b = a.sigmoid()
    b.add_(1)
    try:
        b.sum().backward()
    except RuntimeError as e:
        print("inplace error ok", "modified by an inplace operation" in str(e))
from torch.autograd.functional import hessian, jacobian

print(
    jacobian(lambda t: t**2, torch.ones(3)).shape,
    hessian(lambda t: (t**3).sum(), torch.ones(2)).shape,
)
