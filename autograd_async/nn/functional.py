"""`nn.functional`: relu, gelu, softmax, log_softmax, cross_entropy, mse_loss, dropout, linear."""
