"""A third independent generator of labelled failed-job logs (standard library only; see README.md)."""
