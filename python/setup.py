# SPDX-License-Identifier: Apache-2.0
"""Builds the attnreg wheel and sdist.

The wheel is the pure-Python package plus, when a libattnreg is found to
bundle, a copy of it, the shipped plugins, the conf folder and the shared
libraries it needs that a bare Linux lacks (libinih, and libjansson, which
libattnreg opens to read config.json) in attnreg/_bundled (the prefix
layout), so `import attnreg` needs no environment variable. The package is
ctypes only, so the wheel is tagged py3-none-<platform> (linux_x86_64): one
wheel for every CPython >= 3.9 on the machine.

Where the bundled copy comes from, first match:
  ATTNREG_PREFIX=<dir>   a CMake build folder or an install prefix holding
                         lib/libattnreg.so.0, lib/attnreg/*.so, share/attnreg/conf
  ../build               the repository's default build folder, if built
  csrc/                  an sdist: the C sources it carries are built with
                         CMake (needs cmake, a C compiler, pkg-config,
                         libinih-dev, libjansson-dev)
Else, with ATTNREG_PREFIX=none, or a libattnreg the system has (Debian's
attnreg package, ctypes.util.find_library) or ATTNREG_LIBRARY names, the
package alone is installed (py3-none-any) and uses that library at import.
With none of these the install fails, saying what to do.

The sdist (`python3 setup.py sdist`, run in python/ of the repository)
carries the C sources under csrc/, so it builds without the repository.
"""
import ctypes.util
import glob
import os
import re
import shutil
import subprocess
import sys
import tempfile

from setuptools import setup
from setuptools.command.build_py import build_py
from setuptools.command.sdist import sdist
from setuptools.dist import Distribution

try:
    from wheel.bdist_wheel import bdist_wheel
except ImportError:  # setuptools >= 70.1 carries its own
    try:
        from setuptools.command.bdist_wheel import bdist_wheel
    except ImportError:
        bdist_wheel = None

HERE = os.path.dirname(os.path.abspath(__file__))
CSRC = os.path.join(HERE, "csrc")
# What the sdist carries of the repository to build libattnreg, its plugins
# and conf (the CMake project with tests and benchmarks off).
# (A part the tree does not have is skipped: tests/cpu_ref held the oracle
# sources before they moved to tools/.)
CSRC_PARTS = ["CMakeLists.txt", "LICENSE", "cmake", "core", "include", "plugins", "conf", "tools",
              "cli", "examples", "demo", "python/CMakeLists.txt", "python/stage.cmake",
              "python/attnreg", "docs/man", "docs/attnreg.schema.json",
              "scripts/attnreg.bash-completion", "tests/cpu_ref"]
# Shared libraries every Linux has (glibc's); anything else libattnreg needs
# is bundled beside it. libjansson is opened by soname (no DT_NEEDED).
SYSTEM_LIBS = ("linux-vdso", "ld-linux", "libc.so", "libm.so", "libdl.so", "libpthread.so",
               "librt.so")
DLOPENED_DEPS = ("libjansson.so.4",)

FIX = ("build libattnreg first (cmake -S . -B build -DATTNREG_GPU=off && cmake --build build "
       "in the repository, then pip install ./python, or ATTNREG_PREFIX=<build or prefix>), "
       "install it system-wide (the attnreg Debian package), point ATTNREG_LIBRARY at a "
       "libattnreg.so.0, install from the sdist (which builds it), or set ATTNREG_PREFIX=none "
       "to install the Python package alone and provide the library at run time")

# pip runs dist_info (which needs bdist_wheel on setuptools < 70.1), then bdist_wheel.
if bdist_wheel is None and {"bdist_wheel", "dist_info"} & set(sys.argv):
    sys.exit("attnreg: this Python has no 'wheel' package, so pip cannot build a wheel "
             "(\"invalid command 'bdist_wheel'\"): install it (pip install wheel; Debian: "
             "apt-get install python3-wheel), or use Debian's python3, whose venvs have it "
             "with --system-site-packages; or install a built wheel, which needs neither")


def repo_root():
    """The repository (python/..) or, in an sdist, csrc/."""
    if os.path.exists(os.path.join(CSRC, "CMakeLists.txt")):
        return CSRC
    return os.path.join(HERE, "..")


def library_version(path):
    """attnreg_version_string() of the libattnreg at path (None when it does
    not load)."""
    try:
        lib = ctypes.CDLL(path)
    except OSError:
        return None
    lib.attnreg_version_string.restype = ctypes.c_char_p
    return lib.attnreg_version_string().decode()


def version():
    """The one version: CMakeLists.txt's project() line (the repository's or
    the sdist's), else that of the library the package will use."""
    cmakelists = os.path.join(repo_root(), "CMakeLists.txt")
    if os.path.exists(cmakelists):
        with open(cmakelists) as f:
            m = re.search(r"project\(attnreg VERSION ([0-9.]+)", f.read())
        return m.group(1) if m else "0.0.0"
    env = os.environ.get("ATTNREG_PREFIX")
    for path in (os.path.join(env, "lib", "libattnreg.so.0") if env and env != "none" else None,
                 os.environ.get("ATTNREG_LIBRARY"), ctypes.util.find_library("attnreg")):
        found = path and library_version(path)
        if found:
            return found
    raise SystemExit("attnreg: python/ alone, without the repository around it or an sdist's "
                     "csrc/, and no libattnreg to take the version from: " + FIX)


def has_lib(d):
    return os.path.exists(os.path.join(d, "lib", "libattnreg.so.0"))


def prefix():
    """The folder to bundle from, "none" for the package alone, "csrc" to
    build the sdist's sources, or None: nothing to bundle or use."""
    env = os.environ.get("ATTNREG_PREFIX")
    if env:
        if env == "none":
            return "none"
        if not has_lib(env):
            raise SystemExit(f"ATTNREG_PREFIX={env}: no lib/libattnreg.so.0 there")
        return env
    default = os.path.join(HERE, "..", "build")
    if has_lib(default):
        return default
    if os.path.exists(os.path.join(CSRC, "CMakeLists.txt")):
        return "csrc"
    if os.environ.get("ATTNREG_LIBRARY") or ctypes.util.find_library("attnreg"):
        return "none"
    return None


def build_csrc(build_dir):
    """Builds the sdist's C sources (libattnreg, plugins, conf) into
    build_dir, without tests, benchmarks or GPU kernels."""
    cmake = shutil.which("cmake")
    if not cmake:
        raise SystemExit("attnreg: building libattnreg from the sdist needs cmake (Debian: "
                         "apt-get install cmake build-essential pkg-config libinih-dev "
                         "libjansson-dev)")
    configure = [cmake, "-S", CSRC, "-B", build_dir, "-DCMAKE_BUILD_TYPE=Release",
                 "-DATTNREG_TESTS=OFF", "-DATTNREG_BENCH=OFF", "-DATTNREG_GPU=off",
                 "-DCMAKE_INSTALL_LIBDIR=lib", "-DCMAKE_INSTALL_DATADIR=share"]
    jobs = os.environ.get("CMAKE_BUILD_PARALLEL_LEVEL", "2")
    for cmd in (configure, [cmake, "--build", build_dir, "--target", "attnreg-runtime", "-j", jobs]):
        print("attnreg:", " ".join(cmd))
        if subprocess.call(cmd) != 0:
            raise SystemExit("attnreg: building libattnreg from the sdist failed (see above); "
                             "it needs a C11 compiler, cmake >= 3.20, pkg-config, libinih-dev "
                             "and libjansson-dev")
    return build_dir


def needed_libs(lib):
    """Paths of the shared libraries lib needs beyond glibc, and of those
    libattnreg opens by soname, as the dynamic loader finds them here."""
    out = {}
    try:
        text = subprocess.run(["ldd", lib], capture_output=True, text=True, check=True).stdout
    except (OSError, subprocess.CalledProcessError) as e:
        raise SystemExit(f"attnreg: ldd {lib} failed: {e}")
    for line in text.splitlines():
        m = re.match(r"\s*(\S+) => (\S+)", line)
        if m and not m.group(1).startswith(SYSTEM_LIBS) and os.path.exists(m.group(2)):
            out[m.group(1)] = m.group(2)
    ldconfig = subprocess.run(["/sbin/ldconfig", "-p"], capture_output=True, text=True).stdout
    for soname in DLOPENED_DEPS:
        m = re.search(r"^\s*" + re.escape(soname) + r" \(libc6,x86-64\) => (\S+)$", ldconfig,
                      re.M)
        if m:
            out[soname] = m.group(1)
        else:
            print(f"attnreg: {soname} not found here: the wheel will need the system's "
                  "(plan_hf_config says so when it is missing)")
    return out


def bundle(src, dest):
    print(f"attnreg: bundling libattnreg, plugins, conf and dependencies from {src}")
    os.makedirs(os.path.join(dest, "lib", "attnreg"))
    os.makedirs(os.path.join(dest, "share", "attnreg", "conf"))
    lib = os.path.realpath(os.path.join(src, "lib", "libattnreg.so.0"))
    shutil.copyfile(lib, os.path.join(dest, "lib", "libattnreg.so.0"))
    for soname, path in needed_libs(lib).items():
        print(f"attnreg: bundling {soname} from {path}")
        shutil.copyfile(os.path.realpath(path), os.path.join(dest, "lib", soname))
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


class BuildPy(build_py):
    def run(self):
        super().run()
        src = prefix()
        dest = os.path.join(self.build_lib, "attnreg", "_bundled")
        shutil.rmtree(dest, ignore_errors=True)
        if src is None:
            raise SystemExit("attnreg: no libattnreg to bundle or to use: " + FIX)
        if src == "none":
            print("attnreg: installing the package alone (it will use the system's "
                  "libattnreg or ATTNREG_LIBRARY)")
            return
        if src == "csrc":
            with tempfile.TemporaryDirectory(prefix="attnreg-build-") as tmp:
                bundle(build_csrc(tmp), dest)
            return
        bundle(src, dest)


class Sdist(sdist):
    """Adds the C sources (CSRC_PARTS) under csrc/."""

    def make_release_tree(self, base_dir, files):
        super().make_release_tree(base_dir, files)
        root = os.path.join(HERE, "..")
        for part in CSRC_PARTS:
            src, dst = os.path.join(root, part), os.path.join(base_dir, "csrc", part)
            if not os.path.exists(src):
                continue
            os.makedirs(os.path.dirname(dst), exist_ok=True)
            if os.path.isdir(src):
                shutil.copytree(src, dst, ignore=shutil.ignore_patterns("__pycache__", "*.pyc"))
            else:
                shutil.copyfile(src, dst)


class BinaryDistribution(Distribution):
    """A wheel holding shared libraries is platform-specific."""

    def has_ext_modules(self):
        return prefix() not in (None, "none")


cmdclass = {"build_py": BuildPy, "sdist": Sdist}
if bdist_wheel is not None:
    class BdistWheel(bdist_wheel):
        """py3-none-<platform>: the libraries are Python-independent (ctypes
        loads them), so one wheel serves every CPython >= 3.9 here."""

        def get_tag(self):
            python, abi, plat = super().get_tag()
            if plat == "any":
                return python, abi, plat
            return "py3", "none", plat

    cmdclass["bdist_wheel"] = BdistWheel

setup(version=version(), packages=["attnreg", "attnreg.integrations"], cmdclass=cmdclass,
      distclass=BinaryDistribution, zip_safe=False)
