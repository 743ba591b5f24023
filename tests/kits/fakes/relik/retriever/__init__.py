from relik.retriever.pytorch_modules.model import GoldenRetriever

__all__ = ["GoldenRetriever"]
