import torch

torch.manual_seed(0)
A = torch.randn(5, 5, dtype=torch.float64)
S = A @ A.T + 5 * torch.eye(5, dtype=torch.float64)
b = torch.randn(5, 2, dtype=torch.float64)
x = torch.linalg.solve(S, b)
L = torch.linalg.cholesky(S)
print(torch.allclose(S @ x, b), torch.allclose(L @ L.mT, S))
w, V = torch.linalg.eigh(S)
print(w.shape, V.shape)
sol = torch.linalg.lstsq(torch.randn(10, 3), torch.randn(10, 1)).solution
print(sol.shape)
U, s, Vh = torch.linalg.svd(A, full_matrices=False)
print(torch.dist(U @ torch.diag(s) @ Vh, A).item() < 1e-10)
# GP hyperparameter fit with LBFGS
X = torch.linspace(0, 1, 20).unsqueeze(1)
y = torch.sin(6 * X).squeeze() + 0.05 * torch.randn(20)
log_ls = torch.zeros((), requires_grad=True)
log_noise = torch.tensor(-2.0, requires_grad=True)
opt = torch.optim.LBFGS([log_ls, log_noise], lr=0.5, max_iter=30, line_search_fn="strong_wolfe")


def nll():
    opt.zero_grad()
    K = torch.exp(
        -torch.cdist(X, X).pow(2) / (2 * log_ls.exp() ** 2)
    ) + log_noise.exp() * torch.eye(20)
    mvn = torch.distributions.MultivariateNormal(torch.zeros(20), covariance_matrix=K)
    loss = -mvn.log_prob(y)
    loss.backward()
    return loss


for _ in range(3):
    opt.step(nll)
print(round(nll().item(), 2))
print(
    torch.linalg.matrix_norm(A).item() > 0, torch.linalg.det(S).item() > 0, torch.logdet(S).item()
)
