"""The labeling pages, thin: check access (`access`), call one service or selector, render.

- `raters`: the queue, the grading page and its endpoints;
- `sets`: a golden set's pages for reviewers, assigning and reassigning;
- `imports`: the import page and its uploads (the golden file's posts to golden_io);
- `review`: agreement, disputes, proposals, adjudication, tier moves, retirement, gold items;
- `calibration`: calibration rounds.

labeling/urls.py names each page's view in its module.
"""
