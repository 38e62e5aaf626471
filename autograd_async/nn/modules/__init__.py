"""The layers of `autograd_async.nn`."""

from .activation import GELU, LogSoftmax, ReLU, Sigmoid, Softmax, Tanh
from .attention import MultiheadAttention
from .batchnorm import BatchNorm1d, BatchNorm2d, GroupNorm, InstanceNorm2d
from .bilinear import Bilinear
from .container import ModuleList, Sequential
from .containers_dict import ModuleDict, ParameterDict, ParameterList
from .conv import Conv1d, Conv2d, Conv3d, ConvTranspose1d, ConvTranspose2d
from .dropout import Dropout
from .flatten import Flatten, Unflatten
from .linear import Identity, Linear
from .loss import CrossEntropyLoss, MSELoss
from .module import IncompatibleKeys, Module
from .normalization import LayerNorm
from .pooling import (
    AdaptiveAvgPool1d,
    AdaptiveAvgPool2d,
    AdaptiveMaxPool2d,
    AvgPool1d,
    AvgPool2d,
    MaxPool1d,
    MaxPool2d,
)
from .sparse import Embedding
from .transformer import TransformerEncoder, TransformerEncoderLayer
from .upsampling import Upsample

# isort: split
from .activations_more import (
    CELU,
    ELU,
    GLU,
    SELU,
    Hardsigmoid,
    Hardswish,
    Hardtanh,
    LeakyReLU,
    LogSigmoid,
    Mish,
    PReLU,
    ReLU6,
    SiLU,
    Softplus,
    Softsign,
    Tanhshrink,
)
from .losses_more import (
    BCELoss,
    BCEWithLogitsLoss,
    CosineEmbeddingLoss,
    HuberLoss,
    KLDivLoss,
    L1Loss,
    MarginRankingLoss,
    NLLLoss,
    SmoothL1Loss,
)

# isort: split
from .rnn import GRU, LSTM, RNN, RNNBase
from .rnn_cells import GRUCell, LSTMCell, RNNCell, RNNCellBase
from .sparse import EmbeddingBag

# isort: split
from .margin_losses import (
    GaussianNLLLoss,
    HingeEmbeddingLoss,
    MultiLabelMarginLoss,
    MultiLabelSoftMarginLoss,
    MultiMarginLoss,
    PoissonNLLLoss,
    SoftMarginLoss,
    TripletMarginLoss,
    TripletMarginWithDistanceLoss,
)

# isort: split
from .channel_rearrange import (
    ChannelShuffle,
    PixelShuffle,
    PixelUnshuffle,
    RMSNorm,
    Softmax2d,
    Softmin,
)
from .padding import (
    CircularPad1d,
    CircularPad2d,
    CircularPad3d,
    ConstantPad1d,
    ConstantPad2d,
    ConstantPad3d,
    ReflectionPad1d,
    ReflectionPad2d,
    ReflectionPad3d,
    ReplicationPad1d,
    ReplicationPad2d,
    ReplicationPad3d,
    ZeroPad1d,
    ZeroPad2d,
    ZeroPad3d,
)

__all__ = [
    "AdaptiveAvgPool1d",
    "AdaptiveAvgPool2d",
    "AdaptiveMaxPool2d",
    "AvgPool1d",
    "AvgPool2d",
    "BatchNorm1d",
    "BatchNorm2d",
    "Bilinear",
    "Conv1d",
    "Conv2d",
    "Conv3d",
    "ConvTranspose1d",
    "ConvTranspose2d",
    "CrossEntropyLoss",
    "Dropout",
    "Embedding",
    "Flatten",
    "GELU",
    "GroupNorm",
    "Identity",
    "IncompatibleKeys",
    "InstanceNorm2d",
    "LayerNorm",
    "Linear",
    "LogSoftmax",
    "MSELoss",
    "MaxPool1d",
    "MaxPool2d",
    "Module",
    "ModuleDict",
    "ModuleList",
    "MultiheadAttention",
    "ParameterDict",
    "ParameterList",
    "ReLU",
    "Sequential",
    "Sigmoid",
    "Softmax",
    "Tanh",
    "TransformerEncoder",
    "TransformerEncoderLayer",
    "Unflatten",
    "Upsample",
]
__all__ += [
    "BCELoss",
    "BCEWithLogitsLoss",
    "CELU",
    "CosineEmbeddingLoss",
    "ELU",
    "GLU",
    "Hardsigmoid",
    "Hardswish",
    "Hardtanh",
    "HuberLoss",
    "KLDivLoss",
    "L1Loss",
    "LeakyReLU",
    "LogSigmoid",
    "MarginRankingLoss",
    "Mish",
    "NLLLoss",
    "PReLU",
    "ReLU6",
    "SELU",
    "SiLU",
    "SmoothL1Loss",
    "Softplus",
    "Softsign",
    "Tanhshrink",
]
__all__ += ["EmbeddingBag"]
__all__ += [
    "GaussianNLLLoss",
    "HingeEmbeddingLoss",
    "MultiLabelMarginLoss",
    "MultiLabelSoftMarginLoss",
    "MultiMarginLoss",
    "PoissonNLLLoss",
    "SoftMarginLoss",
    "TripletMarginLoss",
    "TripletMarginWithDistanceLoss",
]
__all__ += ["ChannelShuffle", "PixelShuffle", "PixelUnshuffle", "RMSNorm", "Softmax2d", "Softmin"]
__all__ += [
    "CircularPad1d",
    "CircularPad2d",
    "CircularPad3d",
    "ConstantPad1d",
    "ConstantPad2d",
    "ConstantPad3d",
    "ReflectionPad1d",
    "ReflectionPad2d",
    "ReflectionPad3d",
    "ReplicationPad1d",
    "ReplicationPad2d",
    "ReplicationPad3d",
    "ZeroPad1d",
    "ZeroPad2d",
    "ZeroPad3d",
]
__all__ += ["GRU", "GRUCell", "LSTM", "LSTMCell", "RNN", "RNNBase", "RNNCell", "RNNCellBase"]

# isort: split
from .adaptive_softmax import AdaptiveLogSoftmaxWithLoss  # noqa: E402
from .batchnorm import BatchNorm3d, InstanceNorm1d, InstanceNorm3d  # noqa: E402
from .container import Container  # noqa: E402
from .conv import ConvTranspose3d  # noqa: E402
from .distance import CosineSimilarity, PairwiseDistance  # noqa: E402
from .dropout import (  # noqa: E402
    AlphaDropout,
    Dropout1d,
    Dropout2d,
    Dropout3d,
    FeatureAlphaDropout,
)
from .fold import Fold, Unfold  # noqa: E402
from .fractional_pooling import FractionalMaxPool2d, FractionalMaxPool3d  # noqa: E402
from .lazy import (  # noqa: E402
    LazyBatchNorm1d,
    LazyBatchNorm2d,
    LazyBatchNorm3d,
    LazyConv1d,
    LazyConv2d,
    LazyConv3d,
    LazyConvTranspose1d,
    LazyConvTranspose2d,
    LazyConvTranspose3d,
    LazyInstanceNorm1d,
    LazyInstanceNorm2d,
    LazyInstanceNorm3d,
    LazyLinear,
)
from .local_response import CrossMapLRN2d, LocalResponseNorm  # noqa: E402
from .loss import CTCLoss  # noqa: E402
from .losses_more import NLLLoss2d  # noqa: E402
from .lp_pooling import LPPool1d, LPPool2d, LPPool3d  # noqa: E402
from .pooling import (  # noqa: E402
    AdaptiveAvgPool3d,
    AdaptiveMaxPool1d,
    AdaptiveMaxPool3d,
    AvgPool3d,
    MaxPool3d,
)
from .thresholds import Hardshrink, RReLU, Softshrink, Threshold  # noqa: E402
from .transformer_decoder import (  # noqa: E402
    Transformer,
    TransformerDecoder,
    TransformerDecoderLayer,
)
from .unpooling import MaxUnpool1d, MaxUnpool2d, MaxUnpool3d  # noqa: E402
from .upsampling import UpsamplingBilinear2d, UpsamplingNearest2d  # noqa: E402

__all__ += [
    "AdaptiveAvgPool3d",
    "AdaptiveLogSoftmaxWithLoss",
    "AdaptiveMaxPool1d",
    "AdaptiveMaxPool3d",
    "AlphaDropout",
    "AvgPool3d",
    "BatchNorm3d",
    "CTCLoss",
    "Container",
    "ConvTranspose3d",
    "CosineSimilarity",
    "CrossMapLRN2d",
    "Dropout1d",
    "Dropout2d",
    "Dropout3d",
    "FeatureAlphaDropout",
    "Fold",
    "FractionalMaxPool2d",
    "FractionalMaxPool3d",
    "Hardshrink",
    "InstanceNorm1d",
    "InstanceNorm3d",
    "LPPool1d",
    "LPPool2d",
    "LPPool3d",
    "LazyBatchNorm1d",
    "LazyBatchNorm2d",
    "LazyBatchNorm3d",
    "LazyConv1d",
    "LazyConv2d",
    "LazyConv3d",
    "LazyConvTranspose1d",
    "LazyConvTranspose2d",
    "LazyConvTranspose3d",
    "LazyInstanceNorm1d",
    "LazyInstanceNorm2d",
    "LazyInstanceNorm3d",
    "LazyLinear",
    "LocalResponseNorm",
    "MaxPool3d",
    "MaxUnpool1d",
    "MaxUnpool2d",
    "MaxUnpool3d",
    "NLLLoss2d",
    "PairwiseDistance",
    "RReLU",
    "Softshrink",
    "Threshold",
    "Transformer",
    "TransformerDecoder",
    "TransformerDecoderLayer",
    "Unfold",
    "UpsamplingBilinear2d",
    "UpsamplingNearest2d",
]
