import pytest

from minicalc.integers import (collatz_steps, digit_sum, factorial, fibonacci, greatest_divisor, is_perfect_square,
                               is_prime, prime_factors, to_base)


def test_greatest_divisor_simple():
    assert greatest_divisor(12, 18) == 6


def test_greatest_divisor_coprime():
    assert greatest_divisor(9, 28) == 1


def test_greatest_divisor_with_zero():
    assert greatest_divisor(0, 5) == 5


def test_greatest_divisor_negative():
    assert greatest_divisor(-8, 12) == 4


def test_is_prime_small_primes():
    assert is_prime(2) is True
    assert is_prime(3) is True


def test_is_prime_larger_prime():
    assert is_prime(97) is True


def test_is_prime_square_of_prime():
    assert is_prime(49) is False


def test_is_prime_composite():
    assert is_prime(15) is False


def test_is_prime_one_and_zero():
    assert is_prime(1) is False
    assert is_prime(0) is False


def test_prime_factors_composite():
    assert prime_factors(60) == [2, 2, 3, 5]


def test_prime_factors_prime():
    assert prime_factors(13) == [13]


def test_prime_factors_power():
    assert prime_factors(27) == [3, 3, 3]


def test_digit_sum_simple():
    assert digit_sum(1234) == 10


def test_digit_sum_negative():
    assert digit_sum(-505) == 10


def test_digit_sum_zero():
    assert digit_sum(0) == 0


def test_collatz_steps_one():
    assert collatz_steps(1) == 0


def test_collatz_steps_six():
    assert collatz_steps(6) == 8


def test_collatz_steps_power_of_two():
    assert collatz_steps(16) == 4


def test_collatz_steps_bad_input():
    with pytest.raises(ValueError):
        collatz_steps(0)


def test_to_base_binary():
    assert to_base(10, 2) == "1010"


def test_to_base_hex():
    assert to_base(255, 16) == "ff"


def test_to_base_zero():
    assert to_base(0, 7) == "0"


def test_to_base_base_ten():
    assert to_base(409, 10) == "409"


def test_to_base_bad_base():
    with pytest.raises(ValueError):
        to_base(5, 1)


def test_fibonacci_start():
    assert fibonacci(0) == 0
    assert fibonacci(1) == 1


def test_fibonacci_ten():
    assert fibonacci(10) == 55


def test_fibonacci_two():
    assert fibonacci(2) == 1


def test_factorial_zero():
    assert factorial(0) == 1


def test_factorial_five():
    assert factorial(5) == 120


def test_factorial_three():
    assert factorial(3) == 6


def test_factorial_negative():
    with pytest.raises(ValueError):
        factorial(-1)


def test_is_perfect_square_yes():
    assert is_perfect_square(49) is True


def test_is_perfect_square_no():
    assert is_perfect_square(50) is False


def test_is_perfect_square_zero_and_one():
    assert is_perfect_square(0) is True
    assert is_perfect_square(1) is True


def test_is_perfect_square_negative():
    assert is_perfect_square(-4) is False
