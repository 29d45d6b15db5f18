"""Packages for setuptools; everything else is in pyproject.toml.

The top-level ``resources/`` folder (icons, desktop entry) installs as the package
``xpcsviewer.resources``, which pyproject.toml alone cannot map next to a package search.
"""

from setuptools import find_packages, setup

setup(
    packages=[*find_packages(include=["xpcsviewer", "xpcsviewer.*"]),
              "xpcsviewer.resources", "xpcsviewer.resources.icons"],
    package_dir={"xpcsviewer.resources": "resources",
                 "xpcsviewer.resources.icons": "resources/icons"},
)
