from .driver import driver  # noqa: F401  (as Triton: triton.runtime.driver is the DriverConfig)
