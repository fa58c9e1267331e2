"""Integer arithmetic."""


def greatest_divisor(a, b):
    """Greatest common divisor of two integers (always >= 0)."""
    a, b = abs(a), abs(b)
    while b != 0:
        a, b = b, a % b
    return a


def is_prime(n):
    """True for prime numbers."""
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


def prime_factors(n):
    """Prime factors of n >= 2 in non-decreasing order, with repetition."""
    factors = []
    d = 2
    while n > 1:
        while n % d == 0:
            factors.append(d)
            n //= d
        d += 1
    return factors


def digit_sum(n):
    """Sum of the decimal digits of |n|."""
    n = abs(n)
    total = 0
    while n > 0:
        total += n % 10
        n //= 10
    return total


def collatz_steps(n):
    """Steps of the Collatz map (n/2 or 3n+1) needed to reach 1."""
    if n < 1:
        raise ValueError("n must be positive")
    steps = 0
    while n != 1:
        if n % 2 == 0:
            n = n // 2
        else:
            n = 3 * n + 1
        steps += 1
    return steps


def to_base(n, base):
    """Digits of n >= 0 in `base` (2..16) as a string."""
    if not 2 <= base <= 16:
        raise ValueError("base must be between 2 and 16")
    digits = "0123456789abcdef"
    if n == 0:
        return "0"
    out = ""
    while n > 0:
        out = digits[n % base] + out
        n //= base
    return out


def fibonacci(n):
    """The n-th Fibonacci number, fibonacci(0) == 0, fibonacci(1) == 1."""
    a, b = 0, 1
    for _ in range(n):
        a, b = b, a + b
    return a


def factorial(n):
    """n! for n >= 0."""
    if n < 0:
        raise ValueError("factorial of a negative number")
    product = 1
    for k in range(2, n + 1):
        product *= k
    return product


def is_perfect_square(n):
    """True when n is the square of an integer."""
    if n < 0:
        return False
    root = int(n ** 0.5)
    while root * root > n:
        root -= 1
    while (root + 1) * (root + 1) <= n:
        root += 1
    return root * root == n
