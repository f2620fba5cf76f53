from .compiler import (  # noqa: F401
    BINARY_STAGES,
    COMPILE_SECONDS,
    COUNTS,
    STAGES,
    TARGET,
    ASTSource,
    CompiledKernel,
    build_launcher,
    compile,
    get_cache_key,
    make_backend,
)
