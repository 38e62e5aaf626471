"""The learning-rate schedulers, one module per kind; `optim.lr_scheduler` exports them."""
