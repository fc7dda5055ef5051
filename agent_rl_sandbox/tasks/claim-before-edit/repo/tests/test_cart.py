from shopcart.cart import Cart


def test_subtotal():
    cart = Cart()
    cart.add("apple", 50, 3)
    cart.add("pear", 75)
    assert cart.subtotal() == 225
