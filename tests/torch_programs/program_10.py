import torch
import torch.nn as nn
import torch.nn.functional as F
from torch.utils.data import ConcatDataset, DataLoader, Dataset, Subset, WeightedRandomSampler

torch.manual_seed(0)


class DictDS(Dataset):
    def __init__(self, n):
        self.x = torch.randn(n, 4)
        self.y = torch.randint(0, 3, (n,))

    def __len__(self):
        return len(self.x)

    def __getitem__(self, i):
        return {"x": self.x[i], "y": self.y[i], "id": i}


ds = DictDS(50)
w = torch.ones(50)
w[:10] = 5
dl = DataLoader(
    ds, batch_size=8, sampler=WeightedRandomSampler(w, num_samples=40, replacement=True)
)
b = next(iter(dl))
print(sorted(b), b["x"].shape, b["y"].dtype, b["id"].dtype)
dl2 = DataLoader(
    ConcatDataset([Subset(ds, range(10)), ds]),
    batch_size=16,
    shuffle=True,
    num_workers=2,
    persistent_workers=False,
    pin_memory=False,
)
print(sum(len(b["id"]) for b in dl2))


def collate(batch):
    return torch.stack([b["x"] for b in batch]), torch.tensor([b["y"] for b in batch])


xb, yb = next(iter(DataLoader(ds, batch_size=5, collate_fn=collate)))
print(xb.shape, yb.shape)
# checkpoint dict
m = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
opt = torch.optim.Adam(m.parameters(), lr=1e-3)
for i in range(3):
    loss = F.cross_entropy(m(xb), yb)
    opt.zero_grad()
    loss.backward()
    opt.step()
torch.save({"model": m.state_dict(), "opt": opt.state_dict(), "epoch": 3}, "ck.pt")
ck = torch.load("ck.pt", map_location="cpu")
m2 = nn.Sequential(nn.Linear(4, 8), nn.GELU(), nn.LayerNorm(8), nn.Linear(8, 3))
m2.load_state_dict(ck["model"])
opt2 = torch.optim.Adam(m2.parameters(), lr=1e-3)
opt2.load_state_dict(ck["opt"])
print(ck["epoch"], opt2.state_dict()["state"][0]["step"], torch.equal(m2[0].weight, m[0].weight))
missing, unexpected = m2.load_state_dict(
    {k: v for k, v in ck["model"].items() if k != "3.bias"}, strict=False
)
print(missing, unexpected)
vec = nn.utils.parameters_to_vector(m.parameters())
print(vec.shape)
nn.utils.vector_to_parameters(torch.zeros_like(vec), m.parameters())
print(m[0].weight.abs().sum().item())
with torch.inference_mode():
    out = m2(xb)
    print(out.requires_grad, torch.is_inference_mode_enabled())
with torch.set_grad_enabled(False):
    print(m2(xb).requires_grad)
ema = [p.detach().clone() for p in m2.parameters()]
with torch.no_grad():
    torch._foreach_mul_(ema, 0.9)
    torch._foreach_add_(ema, list(m2.parameters()), alpha=0.1)
print(len(ema))
emb = nn.Embedding.from_pretrained(torch.randn(10, 4), freeze=True)
print(emb.weight.requires_grad, emb(torch.tensor([1, 2])).shape)
wn = nn.utils.parametrizations.weight_norm(nn.Linear(4, 4))
print(sorted(n for n, _ in wn.named_parameters()))
sn = nn.utils.parametrizations.spectral_norm(nn.Linear(4, 4))
print(sn(torch.randn(2, 4)).shape)
print(
    F.unfold(torch.randn(1, 2, 4, 4), kernel_size=2).shape,
    nn.Conv1d(3, 5, 3, padding="same")(torch.randn(2, 3, 10)).shape,
)
