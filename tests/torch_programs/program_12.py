import torch
import torch.nn as nn
import torch.nn.functional as F

torch.manual_seed(0)
# GAN on 2-d data
G = nn.Sequential(nn.Linear(2, 16), nn.ReLU(), nn.Linear(16, 2))
D = nn.Sequential(nn.Linear(2, 16), nn.LeakyReLU(0.2), nn.Linear(16, 1))
og = torch.optim.Adam(G.parameters(), lr=2e-3, betas=(0.5, 0.999))
od = torch.optim.Adam(D.parameters(), lr=2e-3, betas=(0.5, 0.999))
bce = nn.BCEWithLogitsLoss()
for step in range(20):
    real = torch.randn(32, 2) * 0.5 + torch.tensor([2.0, -1.0])
    z = torch.randn(32, 2)
    fake = G(z)
    ld = bce(D(real), torch.ones(32, 1)) + bce(D(fake.detach()), torch.zeros(32, 1))
    od.zero_grad()
    ld.backward()
    od.step()
    lg = bce(D(fake), torch.ones(32, 1))
    og.zero_grad()
    lg.backward()
    og.step()
print(round(ld.item(), 2) > 0, round(lg.item(), 2) > 0)
# policy gradient REINFORCE
policy = nn.Sequential(nn.Linear(4, 32), nn.Tanh(), nn.Linear(32, 2))
opt = torch.optim.RMSprop(policy.parameters(), lr=1e-2)
logps, rewards = [], []
for t in range(10):
    s = torch.randn(4)
    dist = torch.distributions.Categorical(logits=policy(s))
    a = dist.sample()
    logps.append(dist.log_prob(a))
    rewards.append(float(a.item() == 1))
R = torch.tensor(rewards)
ret = torch.flip(torch.cumsum(torch.flip(R, [0]), 0), [0])
ret = (ret - ret.mean()) / (ret.std() + 1e-8)
loss = -(torch.stack(logps) * ret).sum()
opt.zero_grad()
loss.backward()
opt.step()
print(loss.shape, torch.stack(logps).shape)
# misc
x = torch.randn(3, 4, requires_grad=True)
y = x.clone()
y[0] = 0
y.sum().backward()
print(x.grad[0].tolist(), x.grad[1].tolist())
print(torch.nn.functional.gumbel_softmax(torch.randn(2, 3), tau=0.5, hard=True).sum(1).tolist())
print(
    F.kl_div(
        F.log_softmax(torch.randn(2, 3), 1), F.softmax(torch.randn(2, 3), 1), reduction="batchmean"
    ).item()
    >= 0
)
print(
    F.smooth_l1_loss(torch.zeros(3), torch.tensor([0.5, 1.0, 2.0]), beta=1.0).item(),
    F.huber_loss(torch.zeros(2), torch.ones(2)).item(),
)
print(torch.nn.functional.cosine_similarity(torch.ones(2, 3), torch.ones(2, 3)).tolist())
t = torch.arange(6).view(2, 3)
print(t.T.flatten().tolist(), t.flip(1).tolist(), torch.tril(torch.ones(3, 3)).sum().item())
print(
    torch.cuda.is_available(),
    torch.backends.mps.is_available() if hasattr(torch.backends, "mps") else None,
)
dev = torch.device("cuda" if torch.cuda.is_available() else "cpu")
print(dev, torch.zeros(2, device=dev).device)
print(torch.get_default_dtype(), torch.finfo(torch.float32).eps, torch.iinfo(torch.int32).max)
print(x.data.shape, x.grad.data.zero_().sum().item(), x.is_leaf, x.grad_fn, (x * 2).grad_fn.name())
w = torch.empty(3, 5)
nn.init.xavier_uniform_(w, gain=nn.init.calculate_gain("relu"))
print(w.abs().max().item() < 2)
print(torch.allclose(torch.softmax(torch.tensor([1.0, 2.0]), dim=0).sum(), torch.tensor(1.0)))
print(
    torch.tensor([1, 2, 3]).float().mean().item(),
    torch.tensor([[1, 2], [3, 4]]).max().item(),
    int(torch.tensor(5)),
)
print(
    torch.from_numpy(__import__("numpy").ones(3)).dtype,
    torch.tensor([1.5]).numpy().dtype,
    torch.ones(2).tolist(),
)
print(
    round(torch.tensor(2.0).sqrt().item(), 4),
    torch.tensor([1.0, 2.0]).pow(2).sum().item(),
    torch.exp(torch.tensor(0.0)).item(),
)
print(
    torch.zeros(2, 3).unsqueeze(-1).squeeze().shape,
    torch.empty(0).numel(),
    torch.ones(2, 2).masked_select(torch.eye(2, dtype=torch.bool)).tolist(),
)
