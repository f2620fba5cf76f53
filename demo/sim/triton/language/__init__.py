"""The part of triton.language the simulated JIT and kcache's compile workers use."""


class constexpr:
    def __init__(self, value):
        self.value = value

    def __repr__(self):
        return f"constexpr[{self.value!r}]"

    def __eq__(self, other):
        return isinstance(other, constexpr) and other.value == self.value

    def __hash__(self):
        return hash(("constexpr", self.value))


class dtype:
    def __init__(self, name):
        self.name = name

    def __str__(self):
        return self.name

    def __repr__(self):
        return f"triton.language.{self.name}"

    def __eq__(self, other):
        return isinstance(other, dtype) and other.name == self.name

    def __hash__(self):
        return hash(("dtype", self.name))


float16 = dtype("fp16")
float32 = dtype("fp32")
bfloat16 = dtype("bf16")
