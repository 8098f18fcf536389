-- The tutorial's tables as its SQL file defines them (MySQL, utf8mb4): the
-- columns feedd import reads, with the types and defaults of hmdp.sql.
-- Tests and feedd bench import load it into a database of their own.

CREATE TABLE tb_user (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT COMMENT 'primary key',
  phone       VARCHAR(11)  NOT NULL COMMENT 'mobile phone number',
  password    VARCHAR(128) NULL DEFAULT '' COMMENT 'password, stored hashed',
  nick_name   VARCHAR(32)  NULL DEFAULT '' COMMENT 'nickname, by default user_ and random letters',
  icon        VARCHAR(255) NULL DEFAULT '' COMMENT 'avatar',
  create_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP    NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id),
  UNIQUE KEY uniqe_key_phone (phone)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_general_ci;

CREATE TABLE tb_user_info (
  user_id     BIGINT UNSIGNED NOT NULL COMMENT 'primary key, the user id',
  city        VARCHAR(64)  NULL DEFAULT '' COMMENT 'city name',
  introduce   VARCHAR(128) NULL DEFAULT NULL COMMENT 'self introduction, at most 128 characters',
  fans        INT UNSIGNED NULL DEFAULT 0 COMMENT 'followers',
  followee    INT UNSIGNED NULL DEFAULT 0 COMMENT 'users followed',
  gender      TINYINT UNSIGNED NULL DEFAULT 0 COMMENT '0: male, 1: female',
  birthday    DATE NULL DEFAULT NULL,
  credits     INT UNSIGNED NULL DEFAULT 0,
  level       TINYINT UNSIGNED NULL DEFAULT 0 COMMENT 'membership level 0-9, 0: none',
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (user_id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_general_ci;

CREATE TABLE tb_blog (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  shop_id     BIGINT NOT NULL COMMENT 'the shop',
  user_id     BIGINT UNSIGNED NOT NULL COMMENT 'the author',
  title       VARCHAR(255)  NOT NULL,
  images      VARCHAR(2048) NOT NULL COMMENT 'photos, at most 9, separated by commas',
  content     VARCHAR(2048) NOT NULL,
  liked       INT UNSIGNED NULL DEFAULT 0 COMMENT 'likes',
  comments    INT UNSIGNED NULL DEFAULT NULL COMMENT 'comments',
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_general_ci;

CREATE TABLE tb_follow (
  id             BIGINT NOT NULL AUTO_INCREMENT,
  user_id        BIGINT UNSIGNED NOT NULL COMMENT 'the follower',
  follow_user_id BIGINT UNSIGNED NOT NULL COMMENT 'the user followed',
  create_time    TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_general_ci;

CREATE TABLE tb_blog_comments (
  id          BIGINT UNSIGNED NOT NULL AUTO_INCREMENT,
  user_id     BIGINT UNSIGNED NOT NULL COMMENT 'the commenter',
  blog_id     BIGINT UNSIGNED NOT NULL COMMENT 'the post',
  parent_id   BIGINT UNSIGNED NOT NULL COMMENT 'the first-level comment it belongs to, 0 for a first-level comment',
  answer_id   BIGINT UNSIGNED NOT NULL COMMENT 'the comment it answers',
  content     VARCHAR(255) NOT NULL,
  liked       INT UNSIGNED NULL DEFAULT NULL,
  status      TINYINT UNSIGNED NULL DEFAULT NULL COMMENT '0: normal, 1: reported, 2: hidden',
  create_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP,
  update_time TIMESTAMP NOT NULL DEFAULT CURRENT_TIMESTAMP ON UPDATE CURRENT_TIMESTAMP,
  PRIMARY KEY (id)
) ENGINE = InnoDB DEFAULT CHARSET = utf8mb4 COLLATE = utf8mb4_general_ci;
