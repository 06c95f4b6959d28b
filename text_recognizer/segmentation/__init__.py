"""Page -> text lines: segmenters that find lines (polygon + baseline in page pixels), their reading order,
and the scores that compare found lines with true ones."""
