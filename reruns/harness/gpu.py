"""Device facts: GPU product, architecture, driver, libraries and clocks (read, never set)."""

from __future__ import annotations

import importlib.metadata
import platform
import shutil
import subprocess
from typing import Any

from .manifest import normalize_product


def _pkg_version(name: str) -> str | None:
    try:
        return importlib.metadata.version(name)
    except importlib.metadata.PackageNotFoundError:
        return None


class GpuProbe:
    """Reads clocks and the driver through NVML (nvidia-ml-py), else nvidia-smi."""

    def __init__(self, torch_device_index: int = 0, pci_bus_id: str | None = None):
        self.nvml = None
        self.handle = None
        try:
            import pynvml

            pynvml.nvmlInit()
            handle = None
            if pci_bus_id:
                try:
                    handle = pynvml.nvmlDeviceGetHandleByPciBusId(pci_bus_id)
                except Exception:
                    handle = None
            if handle is None:
                handle = pynvml.nvmlDeviceGetHandleByIndex(torch_device_index)
            self.nvml, self.handle = pynvml, handle
        except Exception:
            self.nvml = None

    def _smi(self, fields: str) -> list[str] | None:
        if not shutil.which("nvidia-smi"):
            return None
        try:
            out = (
                subprocess.run(
                    ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits"],
                    capture_output=True,
                    text=True,
                    timeout=20,
                    check=True,
                )
                .stdout.strip()
                .splitlines()
            )
            return [x.strip() for x in out[0].split(",")] if out else None
        except Exception:
            return None

    @staticmethod
    def _num(text: str | None) -> float | None:
        try:
            return float(text) if text not in (None, "", "[N/A]", "N/A") else None
        except ValueError:
            return None

    def driver(self) -> str | None:
        if self.nvml:
            try:
                value = self.nvml.nvmlSystemGetDriverVersion()
                return value.decode() if isinstance(value, bytes) else str(value)
            except Exception:
                pass
        row = self._smi("driver_version")
        return row[0] if row else None

    def max_clocks(self) -> dict[str, Any]:
        if self.nvml:
            try:
                nv = self.nvml
                return {
                    "maxSmMHz": int(nv.nvmlDeviceGetMaxClockInfo(self.handle, nv.NVML_CLOCK_SM)),
                    "maxMemoryMHz": int(nv.nvmlDeviceGetMaxClockInfo(self.handle, nv.NVML_CLOCK_MEM)),
                }
            except Exception:
                pass
        row = self._smi("clocks.max.sm,clocks.max.mem")
        if row:
            sm, mem = (self._num(x) for x in row)
            return {"maxSmMHz": None if sm is None else int(sm), "maxMemoryMHz": None if mem is None else int(mem)}
        return {"maxSmMHz": None, "maxMemoryMHz": None}

    def clocks(self) -> dict[str, Any]:
        if self.nvml:
            try:
                nv = self.nvml
                power = None
                try:
                    power = round(nv.nvmlDeviceGetPowerUsage(self.handle) / 1000.0, 1)
                except Exception:
                    pass
                return {
                    "smMHz": int(nv.nvmlDeviceGetClockInfo(self.handle, nv.NVML_CLOCK_SM)),
                    "memoryMHz": int(nv.nvmlDeviceGetClockInfo(self.handle, nv.NVML_CLOCK_MEM)),
                    "temperatureC": int(nv.nvmlDeviceGetTemperature(self.handle, nv.NVML_TEMPERATURE_GPU)),
                    "powerW": power,
                }
            except Exception:
                pass
        row = self._smi("clocks.sm,clocks.mem,temperature.gpu,power.draw")
        if row:
            sm, mem, temp, power = (self._num(x) for x in row)
            return {
                "smMHz": None if sm is None else int(sm),
                "memoryMHz": None if mem is None else int(mem),
                "temperatureC": None if temp is None else int(temp),
                "powerW": power,
            }
        return {"smMHz": None, "memoryMHz": None, "temperatureC": None, "powerW": None}


def detect_environment(torch, device, probe: GpuProbe | None) -> dict[str, Any]:
    libraries = {
        "torch": torch.__version__,
        "triton": _pkg_version("triton"),
        "cuda": torch.version.cuda,
        "driver": probe.driver() if probe else None,
        "python": platform.python_version(),
    }
    if device.type == "cuda":
        props = torch.cuda.get_device_properties(device)
        major, minor = torch.cuda.get_device_capability(device)
        clocks = {"lockedByHarness": False, **(probe.max_clocks() if probe else {})}
        return {
            "vendor": "nvidia",
            "product": normalize_product(torch.cuda.get_device_name(device)),
            "architecture": f"sm_{major}{minor}",
            "clocks": clocks,
            "libraries": libraries,
            "l2CacheBytes": int(getattr(props, "L2_cache_size", 0) or 0),
            "multiprocessors": int(props.multi_processor_count),
            "memoryBytes": int(props.total_memory),
        }
    return {
        "vendor": "cpu",
        "product": platform.processor() or platform.machine() or "cpu",
        "architecture": platform.machine(),
        "clocks": None,
        "libraries": libraries,
    }
