import torch
import torch.nn as nn
from torch.autograd.function import once_differentiable
from torch.utils.checkpoint import checkpoint

torch.manual_seed(0)
x = torch.randn(3, requires_grad=True)
y = torch.randn(3, requires_grad=True)
z = (x * 2).sum()
gx, gy = torch.autograd.grad(z, [x, y], allow_unused=True, materialize_grads=False)
print(gx.tolist(), gy)
gx, gy = torch.autograd.grad((x * 2).sum(), [x, y], allow_unused=True, materialize_grads=True)
print(gy.tolist())
w = (x**2).sum()
w.backward(retain_graph=True)
w.backward()
print(x.grad.tolist() == (4 * x).tolist())
try:
    v = (x**2).sum()
    v.backward()
    v.backward()
except RuntimeError as e:
    print("second backward:", "Trying to backward through the graph a second time" in str(e))
x.grad = None
(x * 3).backward(gradient=torch.ones(3))
print(x.grad.tolist())


class Clamp(torch.autograd.Function):
    @staticmethod
    def forward(ctx, i, lo):
        ctx.save_for_backward(i)
        ctx.lo = lo
        return i.clamp(min=lo)

    @staticmethod
    @once_differentiable
    def backward(ctx, g):
        (i,) = ctx.saved_tensors
        return g * (i > ctx.lo).to(g.dtype), None


a = torch.tensor([-1.0, 0.5, 2.0], requires_grad=True)
Clamp.apply(a, 0.0).sum().backward()
print(a.grad.tolist())
lin = nn.Linear(4, 4)


def block(inp):
    return torch.relu(lin(inp))


inp = torch.randn(2, 4, requires_grad=True)
out = checkpoint(block, inp, use_reentrant=False)
out.sum().backward()
print(inp.grad.shape, lin.weight.grad.shape)
p = nn.Parameter(torch.ones(2))
seen = []
p.register_post_accumulate_grad_hook(lambda t: seen.append(t.grad.clone()))
(p * 3).sum().backward()
print(seen[0].tolist())
m = nn.Linear(2, 2)
calls = []
m.register_full_backward_pre_hook(lambda mod, go: calls.append("pre"))
m.register_full_backward_hook(lambda mod, gi, go: calls.append("post"))
m(torch.randn(1, 2, requires_grad=True)).sum().backward()
print(calls)
with torch.autograd.profiler.profile() as prof:
    (torch.randn(10, 10, requires_grad=True) @ torch.randn(10, 10)).sum().backward()
print(len(prof.key_averages()) > 0)
print(
    torch.autograd.grad(torch.autograd.grad((x**3).sum(), x, create_graph=True)[0].sum(), x)[
        0
    ].shape
)
t = torch.randn(4, requires_grad=True)
u = t.detach()
u.zero_()
print(t.abs().sum().item() == 0)
print(torch.enable_grad, torch.is_grad_enabled())


@torch.no_grad()
def f(q):
    return q * 2


print(f(t).requires_grad)


@torch.inference_mode()
def g(q):
    return q * 2


print(g(t).requires_grad, g(t).is_inference())
