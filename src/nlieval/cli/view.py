"""``nlieval view``: a static site of run folders (:mod:`nlieval.view`), written into a
folder that opens from ``file://``, and with ``--serve`` served on 127.0.0.1."""

from __future__ import annotations

import argparse

from ..view import ViewConfig, build_site, serve
from .args import add_command, settings_from_args


def cmd_view(args: argparse.Namespace) -> int:
    """Write the site; with ``--serve``, serve it until interrupted."""
    cfg = settings_from_args(ViewConfig, args, runs=tuple(args.runs))
    site = build_site(cfg)
    print(f"written: {site / 'index.html'} (open it in a browser; it needs no network)")
    if cfg.serve:
        with serve(site, cfg.host, cfg.port) as server:
            port = server.server_address[1]
            print(f"serving {site} at http://{cfg.host}:{port}/ (Ctrl-C stops it)", flush=True)
            try:
                server.serve_forever()
            except KeyboardInterrupt:
                print("stopped")
    return 0


def add_commands(sub: argparse._SubParsersAction[argparse.ArgumentParser]) -> None:
    """``view``.

    >>> parser = argparse.ArgumentParser()
    >>> add_commands(parser.add_subparsers(dest="command"))
    >>> args = parser.parse_args(["view", "runs/a", "runs/b", "--out", "site", "--serve"])
    >>> args.runs, args.out, args.serve, args.host
    (['runs/a', 'runs/b'], 'site', True, '127.0.0.1')
    """
    add_command(sub, "view", handler=cmd_view)
