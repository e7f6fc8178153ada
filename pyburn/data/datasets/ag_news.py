"""AG News: news articles' titles and descriptions in four topics, from the CSV files of
``ag_news_csv.tar.gz`` (Zhang, Zhao and LeCun, "Character-level Convolutional Networks for
Text Classification", 2015).

``train.csv`` (120,000 articles) and ``test.csv`` (7,600) have no header row; each record is a
class index from 1 to 4, a title and a description, every field in double quotes (a quote in
a field doubled). The release's readme says that newlines in the text are written as a
backslash followed by "n": those two characters are read back as a newline. Any other
backslash is kept as it is.
"""

from __future__ import annotations

from pathlib import Path
from typing import ClassVar

from ...errors import FormatError
from .files import PathLike
from .mnist import DatasetUnavailableError, data_root
from .tabular import _Rows, csv_records


class AGNews(_Rows):
    """AG News's training articles (``train.csv``) or its test articles (``test.csv``), from
    the folder `root` (default ``$PYBURN_DATA/ag_news_csv``, the folder in the tarball), read
    once and held in `rows`, in file order.

    Item ``i`` is ``(text, label)``: the title and the description joined by one space, with
    each ``\\n`` of the file made a newline, and the class index minus 1, an int indexing
    `classes`. A record without three fields or with a class index other than 1 to 4 raises
    `FormatError` naming its line.

        ds = AGNews(train=False)
        text, label = ds[0]         # ('Fears for T N pension after talks Unions ...', 2)
        AGNews.classes[label]       # 'Business'
    """

    #: the class names, by label (as the release's ``classes.txt`` gives them)
    classes: ClassVar[tuple[str, ...]] = ("World", "Sports", "Business", "Sci/Tech")

    def __init__(self, root: PathLike | None = None, train: bool = True):
        self.root = Path(root) if root is not None else data_root() / "ag_news_csv"
        self.train = train
        path = self.root / ("train.csv" if train else "test.csv")
        if not path.is_file():
            raise DatasetUnavailableError(
                f"AGNews is not in {self.root} ({path.name} missing). Get ag_news_csv.tar.gz "
                "(the AG News CSV files of Zhang, Zhao and LeCun, 2015; a copy is in the "
                "folder data/ag_news_csv of the GitHub repository mhjabreel/CharCnn_Keras) "
                f"and put train.csv and test.csv in {self.root}.")
        indices = [str(label + 1) for label in range(len(self.classes))]
        rows = []
        for line, fields in csv_records(path, "AGNews"):
            if len(fields) != 3:
                raise FormatError(f"{path}, line {line}: {len(fields)} fields where AG News "
                                  "has 3 (class index, title, description)")
            index, title, description = fields
            if index not in indices:
                raise FormatError(f"{path}, line {line}: class index {index!r} is not one "
                                  f"of {', '.join(indices)}")
            # the space between title and description keeps a "\" ending the title apart
            # from an "n" starting the description
            rows.append((f"{title} {description}".replace("\\n", "\n"), int(index) - 1))
        super().__init__(path, rows)
