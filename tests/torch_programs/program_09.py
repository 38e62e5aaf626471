import torch
import torch.nn.functional as F

torch.manual_seed(0)
x = torch.arange(12.0).reshape(3, 4)
idx = torch.tensor([[0, 1], [2, 3], [1, 0]])
print(x.gather(1, idx).tolist())
print(torch.zeros(3, 5).scatter_add_(1, idx, torch.ones(3, 2)).tolist())
print(x.index_select(0, torch.tensor([2, 0])).tolist())
print(x.masked_fill(x > 5, -1).tolist())
print(torch.where(x > 5, x, torch.zeros_like(x)).sum().item())
print(x.cumsum(dim=1)[:, -1].tolist(), x.sort(dim=1, descending=True).values[0].tolist())
u, inv, cnt = torch.unique(torch.tensor([3, 1, 3, 2, 1]), return_inverse=True, return_counts=True)
print(u.tolist(), inv.tolist(), cnt.tolist())
print(F.one_hot(torch.tensor([0, 2]), num_classes=3).tolist())
gx, gy = torch.meshgrid(torch.arange(2), torch.arange(3), indexing="ij")
print(gx.shape)
torch.testing.assert_close(x.sum(), torch.tensor(66.0))
print(
    x.T.contiguous().is_contiguous(), x.t().is_contiguous(), x.unsqueeze(0).expand(2, -1, -1).shape
)
print(x.chunk(2, dim=1)[1].shape, torch.cat([x, x], 0).shape, torch.stack([x, x]).shape)
print(
    x.mean(dim=(0, 1), keepdim=True).shape,
    x.std(unbiased=False).item(),
    x.var(dim=0, correction=0).tolist(),
)
print(x.max(dim=1), x.amax(1).tolist(), x.argmin().item())
print(torch.clamp(x, min=2, max=5).tolist()[0], x.clip(0, 1).sum().item())
print(
    x.flatten().numpy().dtype,
    x.to(torch.int64).dtype,
    x.long().dtype,
    x.double().dtype,
    x.bool().any().item(),
)
print(
    torch.full((2, 2), 7).dtype,
    torch.tensor([1, 2]).dtype,
    torch.tensor([1.0]).dtype,
    torch.tensor(True).dtype,
)
print(x.new_zeros(2).dtype, x.numel(), x.dim(), x.ndim, x.size(1), x.shape[0], len(x))
print(x.view(-1, 6).shape, x.permute(1, 0).shape, x.repeat(2, 1).shape, x.roll(1, 1)[0].tolist())
print(torch.nn.functional.normalize(x, dim=1).norm(dim=1).tolist())
print(x.detach().clone().requires_grad_().is_leaf, x.device, str(x.device), x.is_cuda)
print(torch.isnan(torch.tensor([float("nan")])).item(), torch.isfinite(x).all().item())
print(torch.tensor([[1, 2], [3, 4]]) @ torch.tensor([[1], [1]]))
print(x[x > 5], x[:, [0, 2]].shape, x[..., None].shape, x[None].shape)
print(torch.randperm(5).sort().values.tolist(), torch.arange(0, 1, 0.25).tolist())
print(x.split([1, 3], dim=1)[1].shape, x.lerp(torch.ones_like(x), 0.5)[0].tolist())
print(torch.Size([2, 3]), x.shape == torch.Size([3, 4]), x.size() == (3, 4), x.shape.numel())
