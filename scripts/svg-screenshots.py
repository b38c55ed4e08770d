#!/usr/bin/env python3
"""Screenshots of `:save` pictures in a real browser engine (headless Chromium).

The SVG tests compare a saved picture's text with the drawing; this shows
what a reader sees: each SVG is placed as an image in an otherwise empty
page and rendered to PNG by the headless Chromium that the `kaleido` 0.2
package bundles (driven through its plotly scope, the one entry point it
offers), so fonts, tints and alignment can be looked at.

    python3 -m venv /tmp/shots && /tmp/shots/bin/pip install kaleido==0.2.1 'plotly<6'
    graphene -e ':atom mma.m16n8k16 warps 2x2 repeat 1x2' -e ':save tiled.svg'
    /tmp/shots/bin/python scripts/svg-screenshots.py tiled.svg     # writes tiled.png

Pictures wider than 2400 pixels are scaled down to that width.
"""

import base64
import os
import re
import sys

MAX_WIDTH = 2400


def main(paths):
    if not paths:
        sys.exit(__doc__)
    try:
        import plotly
        from kaleido.scopes.plotly import PlotlyScope
    except ImportError:
        sys.exit("needs kaleido 0.2 and plotly < 6: see the top of this script")
    # Local plotly.js and no MathJax: the page must load with no network.
    plotly_js = os.path.join(os.path.dirname(plotly.__file__), "package_data", "plotly.min.js")
    scope = PlotlyScope(plotlyjs=plotly_js, mathjax=False)
    for path in paths:
        svg = open(path, "rb").read()
        size = re.search(rb'width="([\d.]+)" height="([\d.]+)"', svg)
        if size is None:
            sys.exit(f"{path}: not an SVG with a width and a height")
        width, height = (float(v) for v in size.groups())
        scale = min(1.0, MAX_WIDTH / width)
        w, h = max(1, int(width * scale)), max(1, int(height * scale))
        image = {
            "source": "data:image/svg+xml;base64," + base64.b64encode(svg).decode(),
            "xref": "paper", "yref": "paper", "x": 0, "y": 1, "sizex": 1, "sizey": 1,
            "xanchor": "left", "yanchor": "top", "sizing": "stretch", "layer": "above",
        }
        page = {
            "data": [],
            "layout": {
                "images": [image], "width": w, "height": h,
                "margin": {"l": 0, "r": 0, "t": 0, "b": 0},
                "xaxis": {"visible": False}, "yaxis": {"visible": False},
                "plot_bgcolor": "white", "paper_bgcolor": "white",
            },
        }
        png = scope.transform(page, format="png", width=w, height=h)
        out = os.path.splitext(path)[0] + ".png"
        with open(out, "wb") as f:
            f.write(png)
        print(f"{out}: {w}×{h} pixels")


if __name__ == "__main__":
    main(sys.argv[1:])
