"""The screenshots of a benchmark folder: where a record's file is (never outside the folder)
and its size from the header, under a pixel limit, nothing decoded."""

from __future__ import annotations

import os
import warnings
from pathlib import Path

from PIL import Image


class ImageFiles:
    """The screenshots under ``DIR/images``: where a record's file is, and its size from the
    header (no pixel decoded), each file read once however many records name it."""

    def __init__(self, folder: Path, max_pixels: int):
        self.folder, self.max_pixels = folder, max_pixels
        self._sizes: dict[Path, tuple[int, int] | str] = {}

    def path(self, img_filename: str, field: str = "img_filename") -> Path | str:
        """The file inside the folder, or the problem (naming the record's ``field``). The check
        is on the name as written (absolute, or ``..`` past the folder): a link the data set's
        author placed inside the folder is followed, as Hugging Face snapshots link every file
        into a blob store."""
        norm = os.path.normpath(img_filename.replace("\\", "/"))
        if os.path.isabs(norm) or Path(img_filename).drive or norm == ".." or norm.startswith("../"):
            return f"{field} {img_filename!r} is outside {self.folder.name}/ (names must be relative to {self.folder})"
        return self.folder / img_filename

    def size(self, path: Path) -> tuple[int, int] | str:
        if path not in self._sizes:
            self._sizes[path] = self._read_size(path)
        return self._sizes[path]

    def _read_size(self, path: Path) -> tuple[int, int] | str:
        if not path.is_file():
            return f"missing image file {path}"
        try:
            with warnings.catch_warnings():
                # Our limit below decides; Pillow's warning between its limits would only repeat it.
                warnings.simplefilter("ignore", Image.DecompressionBombWarning)
                with Image.open(path) as im:
                    w, h = im.size
        except Image.DecompressionBombError as e:
            return f"image file {path} is above the pixel limit ({e}); raise --max-image-pixels if it is real"
        except (OSError, SyntaxError, ValueError) as e:
            return f"unreadable image file {path} ({e})"
        if w * h > self.max_pixels:
            return (
                f"image file {path} is {w}x{h} = {w * h / 1e6:.1f} MP, above the limit of "
                f"{self.max_pixels / 1e6:g} MP (raise it with --max-image-pixels if the image is real)"
            )
        return (w, h)
