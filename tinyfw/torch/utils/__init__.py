"""torch.utils: data (Dataset, TensorDataset, DataLoader, random_split)."""
from tinyfw.torch.utils import data

__all__ = ["data"]
