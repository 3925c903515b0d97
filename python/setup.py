# SPDX-License-Identifier: Apache-2.0
"""Builds the attnreg wheel: the pure-Python package plus, when a built or
installed attnreg is found, a copy of libattnreg, the shipped plugins and the
conf folder beside it (attnreg/_bundled, the prefix layout), so that
`import attnreg` needs no environment variable.

Where the copy comes from, first match:
  ATTNREG_PREFIX=<dir>   a CMake build folder or an install prefix holding
                         lib/libattnreg.so.0, lib/attnreg/*.so, share/attnreg/conf
  ../build               the repository's default build folder, if built
Neither: the package alone is installed, and finds the system's libattnreg
(ctypes.util.find_library, e.g. the Debian package) or ATTNREG_LIBRARY at
import. ATTNREG_PREFIX=none forces that.
"""
import glob
import os
import re
import shutil

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.dist import Distribution

HERE = os.path.dirname(os.path.abspath(__file__))


def version():
    with open(os.path.join(HERE, "..", "CMakeLists.txt")) as f:
        m = re.search(r"project\(attnreg VERSION ([0-9.]+)", f.read())
    return m.group(1) if m else "0.0.0"


def prefix():
    env = os.environ.get("ATTNREG_PREFIX")
    if env:
        if env == "none":
            return None
        if not os.path.exists(os.path.join(env, "lib", "libattnreg.so.0")):
            raise SystemExit(f"ATTNREG_PREFIX={env}: no lib/libattnreg.so.0 there")
        return env
    default = os.path.join(HERE, "..", "build")
    if os.path.exists(os.path.join(default, "lib", "libattnreg.so.0")):
        return default
    return None


class BuildPy(build_py):
    def run(self):
        super().run()
        src = prefix()
        dest = os.path.join(self.build_lib, "attnreg", "_bundled")
        shutil.rmtree(dest, ignore_errors=True)
        if src is None:
            print("attnreg: no build or prefix found: installing the package alone "
                  "(it will use the system's libattnreg or ATTNREG_LIBRARY)")
            return
        print(f"attnreg: bundling libattnreg, plugins and conf from {src}")
        os.makedirs(os.path.join(dest, "lib", "attnreg"))
        os.makedirs(os.path.join(dest, "share", "attnreg", "conf"))
        shutil.copyfile(os.path.realpath(os.path.join(src, "lib", "libattnreg.so.0")),
                        os.path.join(dest, "lib", "libattnreg.so.0"))
        for so in glob.glob(os.path.join(src, "lib", "attnreg", "*.so")):
            shutil.copyfile(os.path.realpath(so), os.path.join(dest, "lib", "attnreg",
                                                               os.path.basename(so)))
        # the program Registry(probe_out_of_process=True) runs (executable)
        helper = os.path.join(src, "lib", "attnreg", "attnreg-probe")
        if os.path.exists(helper):
            shutil.copy(os.path.realpath(helper), os.path.join(dest, "lib", "attnreg",
                                                               "attnreg-probe"))
        for ini in glob.glob(os.path.join(src, "share", "attnreg", "conf", "*.ini")):
            shutil.copyfile(ini, os.path.join(dest, "share", "attnreg", "conf",
                                              os.path.basename(ini)))


class BinaryDistribution(Distribution):
    """The wheel holds shared libraries: tag it for this platform."""

    def has_ext_modules(self):
        return prefix() is not None


setup(version=version(), packages=["attnreg"], cmdclass={"build_py": BuildPy},
      distclass=BinaryDistribution, zip_safe=False)
