"""One kernel applying every function of the math library to its own row block
(tests/e2e/test_math_library.py runs it, tests/isa/test_math_library_isa.py compiles it)."""
import xetile_dsl as xd
import xetile_dsl.language as xt


@xd.jit
def math_kernel(x, y, o, C: xt.constexpr):
    """Function i (the order of test_math_library's UNARY, BINARY, PREDICATES) reads rows 8i.. of x (the
    binary ones also rows 8j.. of y, j counting them) and writes rows 8i.. of o."""
    xt.store_tile(xt.tan(xt.load_tile(xt.init_tile(x, [0, 0], [8, C]))), xt.init_tile(o, [0, 0], [8, C]))
    xt.store_tile(xt.asin(xt.load_tile(xt.init_tile(x, [8, 0], [8, C]))), xt.init_tile(o, [8, 0], [8, C]))
    xt.store_tile(xt.acos(xt.load_tile(xt.init_tile(x, [16, 0], [8, C]))), xt.init_tile(o, [16, 0], [8, C]))
    xt.store_tile(xt.atan(xt.load_tile(xt.init_tile(x, [24, 0], [8, C]))), xt.init_tile(o, [24, 0], [8, C]))
    xt.store_tile(xt.sinh(xt.load_tile(xt.init_tile(x, [32, 0], [8, C]))), xt.init_tile(o, [32, 0], [8, C]))
    xt.store_tile(xt.cosh(xt.load_tile(xt.init_tile(x, [40, 0], [8, C]))), xt.init_tile(o, [40, 0], [8, C]))
    xt.store_tile(xt.asinh(xt.load_tile(xt.init_tile(x, [48, 0], [8, C]))), xt.init_tile(o, [48, 0], [8, C]))
    xt.store_tile(xt.acosh(xt.load_tile(xt.init_tile(x, [56, 0], [8, C]))), xt.init_tile(o, [56, 0], [8, C]))
    xt.store_tile(xt.atanh(xt.load_tile(xt.init_tile(x, [64, 0], [8, C]))), xt.init_tile(o, [64, 0], [8, C]))
    xt.store_tile(xt.log10(xt.load_tile(xt.init_tile(x, [72, 0], [8, C]))), xt.init_tile(o, [72, 0], [8, C]))
    xt.store_tile(xt.log1p(xt.load_tile(xt.init_tile(x, [80, 0], [8, C]))), xt.init_tile(o, [80, 0], [8, C]))
    xt.store_tile(xt.expm1(xt.load_tile(xt.init_tile(x, [88, 0], [8, C]))), xt.init_tile(o, [88, 0], [8, C]))
    xt.store_tile(xt.cbrt(xt.load_tile(xt.init_tile(x, [96, 0], [8, C]))), xt.init_tile(o, [96, 0], [8, C]))
    xt.store_tile(xt.exp2(xt.load_tile(xt.init_tile(x, [104, 0], [8, C]))), xt.init_tile(o, [104, 0], [8, C]))
    xt.store_tile(xt.log2(xt.load_tile(xt.init_tile(x, [112, 0], [8, C]))), xt.init_tile(o, [112, 0], [8, C]))
    xt.store_tile(xt.tanh(xt.load_tile(xt.init_tile(x, [120, 0], [8, C]))), xt.init_tile(o, [120, 0], [8, C]))
    xt.store_tile(xt.erf(xt.load_tile(xt.init_tile(x, [128, 0], [8, C]))), xt.init_tile(o, [128, 0], [8, C]))
    xt.store_tile(xt.rsqrt(xt.load_tile(xt.init_tile(x, [136, 0], [8, C]))), xt.init_tile(o, [136, 0], [8, C]))
    xt.store_tile(xt.floor(xt.load_tile(xt.init_tile(x, [144, 0], [8, C]))), xt.init_tile(o, [144, 0], [8, C]))
    xt.store_tile(xt.ceil(xt.load_tile(xt.init_tile(x, [152, 0], [8, C]))), xt.init_tile(o, [152, 0], [8, C]))
    xt.store_tile(xt.trunc(xt.load_tile(xt.init_tile(x, [160, 0], [8, C]))), xt.init_tile(o, [160, 0], [8, C]))
    xt.store_tile(xt.round(xt.load_tile(xt.init_tile(x, [168, 0], [8, C]))), xt.init_tile(o, [168, 0], [8, C]))
    xt.store_tile(xt.erfc(xt.load_tile(xt.init_tile(x, [176, 0], [8, C]))), xt.init_tile(o, [176, 0], [8, C]))
    a0 = xt.load_tile(xt.init_tile(x, [184, 0], [8, C]))
    b0 = xt.load_tile(xt.init_tile(y, [0, 0], [8, C]))
    xt.store_tile(xt.atan2(a0, b0), xt.init_tile(o, [184, 0], [8, C]))
    a1 = xt.load_tile(xt.init_tile(x, [192, 0], [8, C]))
    b1 = xt.load_tile(xt.init_tile(y, [8, 0], [8, C]))
    xt.store_tile(xt.pow(a1, b1), xt.init_tile(o, [192, 0], [8, C]))
    a2 = xt.load_tile(xt.init_tile(x, [200, 0], [8, C]))
    b2 = xt.load_tile(xt.init_tile(y, [16, 0], [8, C]))
    xt.store_tile(xt.fmod(a2, b2), xt.init_tile(o, [200, 0], [8, C]))
    a3 = xt.load_tile(xt.init_tile(x, [208, 0], [8, C]))
    b3 = xt.load_tile(xt.init_tile(y, [24, 0], [8, C]))
    xt.store_tile(xt.copysign(a3, b3), xt.init_tile(o, [208, 0], [8, C]))
    p = xt.load_tile(xt.init_tile(x, [216, 0], [8, C]))
    xt.store_tile(xt.where(xt.isnan(p), 1.0, 0.0).to(o.dtype), xt.init_tile(o, [216, 0], [8, C]))
    xt.store_tile(xt.where(xt.isinf(p), 1.0, 0.0).to(o.dtype), xt.init_tile(o, [224, 0], [8, C]))
    xt.store_tile(xt.where(xt.isfinite(p), 1.0, 0.0).to(o.dtype), xt.init_tile(o, [232, 0], [8, C]))
    xt.store_tile(xt.where(xt.signbit(p), 1.0, 0.0).to(o.dtype), xt.init_tile(o, [240, 0], [8, C]))
