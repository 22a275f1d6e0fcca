"""Sphinx extensions of the book (loaded from ``_config.yml``; they never import the science).

:mod:`.offline_math` serves MathJax from the build itself; :mod:`.launch` points the launch and download
buttons at files that exist in the repository.
"""
