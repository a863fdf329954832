"""Pictures: a tree as SVG and many as one HTML page (draw.py), writing them safely (picture_files.py), the
evaluation report as a page (report_page.py)."""
